// Package deptest keeps Switchboard's dependencies pointing inward. Each
// package may import only the project's packages listed for it: the core
// (chat, identity, delegation, outbox, sessions, gateway, retention) knows no
// platform, brain kind, store or config loader, and sessions and the
// outbox know no store; adapters, brains and stores know the core's
// types. The core also imports no SQL driver, config library or
// WebSocket library.
package deptest

import (
	"go/build"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/switchboard-chat/switchboard/"

// allowed lists, per package, the project's packages it may import.
var allowed = map[string][]string{
	"chat":               nil,
	"identity":           nil,
	"brains":             nil,
	"config":             nil,
	"delegation":         {"chat"},
	"outbox":             {"chat", "delegation"},
	"sessions":           {"chat", "delegation", "outbox"},
	"gateway":            {"brains", "chat", "delegation", "identity", "outbox", "sessions", "world", "world/actions", "world/chains", "world/findings", "world/gossip", "world/insights", "world/shared"},
	"retention":          nil,
	"download":           {"chat"},
	"store/sqlite":       {"chat", "delegation", "gateway", "outbox", "retention", "sessions", "world/chains", "world/findings", "world/gossip", "world/insights", "world/shared"},
	"store/postgres":     {"chat", "delegation", "gateway", "outbox", "retention", "sessions", "world/chains", "world/findings", "world/gossip", "world/insights", "world/shared"},
	"store/dbcopy":       {"store/postgres", "store/sqlite", "world/shared"},
	"store/storetest":    {"chat", "delegation", "gateway", "outbox", "retention", "sessions", "world", "world/chains", "world/findings", "world/gossip", "world/insights", "world/shared"},
	"api":                {"chat", "delegation", "download", "gateway", "identity", "sessions", "world", "world/chains", "world/findings", "world/gossip", "world/insights", "world/shared"},
	"platforms/web":      {"chat", "delegation", "download", "gateway", "outbox", "world", "world/findings", "world/shared"},
	"platforms/telegram": {"chat", "delegation", "gateway", "outbox"},
	"platforms/discord":  {"chat", "delegation", "gateway", "outbox"},
	"brains/script":      {"brains"},
	// The terminal's client speaks the protocol; it knows nothing of
	// the gateway's insides.
	"cliclient":        nil,
	"brains/prompt":    {"brains"},
	"brains/exec":      {"brains", "brains/prompt"},
	"brains/openai":    {"brains", "brains/prompt"},
	"internal/pgtest":  {"internal/testenv"},
	"internal/testenv": nil,
	// The MCP endpoint serves a turn's bound actions; it knows no
	// gateway, store or brain kind.
	"mcpserver": {"brains"},

	// The shared world (SPEC §10): spaces, the action registry, the
	// findings board, insights, bot-to-bot chains, the shared context.
	// Core packages: no store, platform or brain kind.
	"world":          nil,
	"world/actions":  {"brains", "chat", "delegation", "world"},
	"world/chains":   nil,
	"world/findings": {"world", "world/actions"},
	"world/insights": {"world", "world/actions"},
	"world/gossip":   {"brains", "chat"},
	"world/shared":   {"world", "world/actions"},
}

// core lists the packages that must stay free of drivers and libraries of
// the outside world, which forbiddenOutside names.
var core = []string{"chat", "identity", "delegation", "outbox", "sessions", "gateway", "brains", "retention",
	"world", "world/actions", "world/chains", "world/findings", "world/gossip", "world/insights", "world/shared"}

var forbiddenOutside = []string{
	"database/sql", "github.com/mattn/go-sqlite3", "github.com/jackc/pgx",
	"github.com/spf13/viper", "github.com/gorilla/websocket",
	"github.com/go-telegram/bot", "github.com/bwmarrin/discordgo",
	"github.com/modelcontextprotocol/go-sdk",
}

// serverless lists packages that must not serve HTTP themselves: the
// exec brain hands its programs an MCP endpoint through an interface it
// declares (exec.Tools), which the wiring fills with mcpserver.
var serverless = map[string][]string{
	"brains/exec": {"github.com/modelcontextprotocol/go-sdk", module + "mcpserver", "net/http/httptest"},
}

func TestImportsPointInward(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	for pkg, ok := range allowed {
		p, err := build.ImportDir(filepath.Join(root, pkg), 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			if own, isOwn := strings.CutPrefix(imp, module); isOwn && !slices.Contains(ok, own) {
				t.Errorf("%s imports %s, which it must not (allowed: %v)", pkg, own, ok)
			}
			for _, b := range serverless[pkg] {
				if imp == b || strings.HasPrefix(imp, b+"/") {
					t.Errorf("%s imports %s, which it must not: it is given its tools through an interface", pkg, imp)
				}
			}
			if slices.Contains(core, pkg) {
				for _, b := range forbiddenOutside {
					if imp == b || strings.HasPrefix(imp, b+"/") {
						t.Errorf("%s imports %s, which the core must not", pkg, imp)
					}
				}
			}
		}
	}
}
