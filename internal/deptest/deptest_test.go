// Package deptest keeps Switchboard's dependencies pointing inward: the core
// packages know no platform, brain kind, SQL driver or config loader.
package deptest

import (
	"go/build"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const module = "github.com/switchboard-chat/switchboard/"

// forbidden lists, per core package, the imports it must never have.
var forbidden = map[string][]string{
	"gateway":            {module + "platforms", module + "brains/", module + "store", module + "config", module + "cmd", "database/sql", "github.com/mattn/go-sqlite3", "github.com/spf13/viper", "github.com/gorilla/websocket"},
	"identity":           {module + "gateway", module + "platforms", module + "brains", module + "store", module + "config", "database/sql"},
	"brains":             {module},
	"delegation":         {module},
	"config":             {module + "gateway", module + "platforms", module + "brains", module + "store", "database/sql"},
	"store":              {module + "platforms", module + "brains", module + "config", module + "cmd"},
	"platforms/web":      {module + "store", module + "brains", module + "config", module + "cmd", "database/sql"},
	"platforms/discord":  {module + "store", module + "brains", module + "config", module + "cmd", module + "platforms/", "database/sql"},
	"platforms/telegram": {module + "store", module + "brains", module + "config", module + "cmd", module + "platforms/", "database/sql"},
	"brains/script":      {module + "gateway", module + "store", module + "config", module + "platforms", module + "cmd"},
	"brains/exec":        {module + "gateway", module + "store", module + "config", module + "platforms", module + "cmd"},
	"brains/openai":      {module + "gateway", module + "store", module + "config", module + "platforms", module + "cmd"},
	"brains/prompt":      {module + "gateway", module + "store", module + "config", module + "platforms", module + "cmd"},
	"api":                {module + "store", module + "platforms", module + "brains", module + "config", module + "cmd", "database/sql"},
}

func TestCoreImportsPointInward(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	for pkg, banned := range forbidden {
		p, err := build.ImportDir(filepath.Join(root, pkg), 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			for _, b := range banned {
				if imp == b || strings.HasPrefix(imp, b) && (strings.HasSuffix(b, "/") || strings.HasPrefix(imp[len(b):], "/")) {
					t.Errorf("%s imports %s, which it must not", pkg, imp)
				}
			}
		}
	}
}
