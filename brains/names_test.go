package brains_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

func TestCheckArtifactName(t *testing.T) {
	tests := []struct {
		name string
		why  string // in the error; "" means accepted
	}{
		{"report.md", ""},
		{"competitors.json", ""},
		{".hidden", ""},
		{"a b.txt", ""},
		{"résumé.pdf", ""},
		{strings.Repeat("x", 255), ""},
		{"", "empty"},
		{".", "directory itself"},
		{"..", `".."`},
		{"../etc/passwd", `".."`},
		{"a..b", `".."`},
		{"a/b", `"/"`},
		{"/abs", `"/"`},
		{`a\b`, `"\"`},
		{`..\x`, `".."`},
		{"a\x00b", "NUL"},
		{strings.Repeat("x", 256), "longer than 255 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := brains.CheckArtifactName(tt.name)
			if tt.why == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, brains.ErrUnsafeName) || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("err = %v, want ErrUnsafeName saying %q", err, tt.why)
			}
		})
	}
}

// FuzzCheckArtifactName: every accepted name is one local file name.
func FuzzCheckArtifactName(f *testing.F) {
	for _, s := range []string{"a.md", "..", "a/b", `a\b`, "a\x00", ".", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if brains.CheckArtifactName(name) != nil {
			return
		}
		if !filepath.IsLocal(name) || filepath.Base(name) != name || strings.ContainsAny(name, `/\`+"\x00") || len(name) > 255 {
			t.Fatalf("accepted %q", name)
		}
	})
}
