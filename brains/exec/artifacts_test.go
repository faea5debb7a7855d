package exec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// task is a delegated turn of session s1 with notes.md as input,
// expecting competitors.json, summary.md and a never-produced missing.txt.
func task(id string) brains.Turn {
	tn := turn("list our competitors", "")
	tn.Delegation = &brains.Delegation{
		ID: id, From: "Matty Atlas", FromID: "matty", Task: tn.Text, Depth: 1,
		Inputs: []brains.Artifact{{ID: "art-1", Name: "notes.md", MediaType: "text/markdown", Content: []byte("we sell bots")}},
		Expected: []brains.Expected{
			{Name: "competitors.json", MediaType: "application/json"},
			{Name: "summary.md"},
			{Name: "missing.txt"},
		},
	}
	return tn
}

// names lists artifacts as name=media type.
func names(arts []brains.Artifact) string {
	var out []string
	for _, a := range arts {
		out = append(out, a.Name+"="+a.MediaType)
	}
	return strings.Join(out, ",")
}

func TestArtifactsInAndOut(t *testing.T) {
	root := t.TempDir()
	b := newBrain(t, Config{Command: fake("produce"), WorkRoot: root})
	r := reply(t, b, task("dlg-1"))
	if got, want := names(r.Artifacts), "competitors.json=application/json,summary.md=text/markdown; charset=utf-8"; got != want {
		t.Fatalf("artifacts %s, want %s", got, want)
	}
	// The fake built competitors.json from the input it found.
	if got := string(r.Artifacts[0].Content); got != `{"notes":"we sell bots"}` {
		t.Errorf("competitors.json = %s, want it made from notes.md", got)
	}
	fi, err := os.Stat(filepath.Join(sessionDir(t, b, "s1"), "notes.md"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("input file: %v, mode %v; want it written 0600", err, fi.Mode())
	}
}

func TestStaleOutputsAreNotCollected(t *testing.T) {
	root := t.TempDir()
	produce := newBrain(t, Config{Command: fake("produce"), WorkRoot: root})
	reply(t, produce, task("dlg-1"))

	idle := newBrain(t, Config{Command: fake(), WorkRoot: root})
	idle.runs = produce.runs // the same running gateway
	// A corrective retry of the same task: the first attempt's files count.
	if r := reply(t, idle, task("dlg-1")); len(r.Artifacts) != 2 {
		t.Errorf("corrective retry collected %s, want the first attempt's two files", names(r.Artifacts))
	}
	// A new task that writes nothing: the old files are not its outputs.
	if r := reply(t, idle, task("dlg-2")); len(r.Artifacts) != 0 {
		t.Errorf("new task collected stale %s", names(r.Artifacts))
	}
	// It rewrites them: collected again.
	produce.runs = idle.runs
	if r := reply(t, produce, task("dlg-2")); len(r.Artifacts) != 2 {
		t.Errorf("rewritten outputs: collected %s, want two", names(r.Artifacts))
	}
}

func TestUnsafeNamesAreRefused(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		expected string
	}{
		{"input parent", "../evil.sh", "ok.txt"},
		{"input dot dot", "..", "ok.txt"},
		{"input nested", "a/b.txt", "ok.txt"},
		{"input absolute", "/tmp/x", "ok.txt"},
		{"input backslash", `..\x`, "ok.txt"},
		{"input empty", "", "ok.txt"},
		{"expected parent", "ok.md", "../../etc/passwd"},
		{"expected nested", "ok.md", "sub/out.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			b := newBrain(t, Config{Command: fake(), WorkRoot: filepath.Join(root, "work")})
			tn := task("d")
			tn.Delegation.Inputs = []brains.Artifact{{Name: tt.input, Content: []byte("x")}}
			tn.Delegation.Expected = []brains.Expected{{Name: tt.expected}}
			_, err := b.Reply(context.Background(), tn)
			if !errors.Is(err, errUnsafeName) {
				t.Fatalf("err = %v, want errUnsafeName", err)
			}
			if _, err := os.Stat(filepath.Join(root, "evil.sh")); err == nil {
				t.Error("an input was written outside the working directory")
			}
		})
	}
}

func TestSymlinkOutputIsNotCollected(t *testing.T) {
	b := newBrain(t, Config{Command: fake("symlink=summary.md")})
	tn := task("d")
	r, err := b.Reply(context.Background(), tn)
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	if len(r.Artifacts) != 0 {
		t.Errorf("collected %s through a symlink", names(r.Artifacts))
	}
}

func TestInputReplacesSymlink(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(root, "outside.txt")
	os.WriteFile(outside, []byte("keep"), 0o600)
	b := newBrain(t, Config{Command: fake(), WorkRoot: filepath.Join(root, "work")})
	dir := sessionDir(t, b, "s1")
	os.MkdirAll(dir, 0o700)
	os.Symlink(outside, filepath.Join(dir, "notes.md"))

	reply(t, b, task("d"))
	if got, _ := os.ReadFile(outside); string(got) != "keep" {
		t.Errorf("writing an input followed a symlink: outside file now %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "notes.md")); string(got) != "we sell bots" {
		t.Errorf("notes.md = %q, want the input", got)
	}
}

func TestMediaType(t *testing.T) {
	tests := []struct {
		e       brains.Expected
		content string
		want    string
	}{
		{brains.Expected{Name: "a.json", MediaType: "application/vnd.x+json"}, "{}", "application/vnd.x+json"},
		{brains.Expected{Name: "a.json"}, "{}", "application/json"},
		{brains.Expected{Name: "A.MD"}, "#", "text/markdown; charset=utf-8"},
		{brains.Expected{Name: "a.csv"}, "a,b", "text/csv; charset=utf-8"},
		{brains.Expected{Name: "noext"}, "plain words", "text/plain; charset=utf-8"},
		{brains.Expected{Name: "blob"}, "\x00\x01\x02", "application/octet-stream"},
	}
	for _, tt := range tests {
		if got := mediaType(tt.e, []byte(tt.content)); got != tt.want {
			t.Errorf("mediaType(%s) = %q, want %q", tt.e.Name, got, tt.want)
		}
	}
}

// What a delegated turn writes at the top of its directory besides the
// expected outputs is collected too, after them, by name: not hidden
// files, symlinks, directories or the inputs it left alone.
func TestOtherFilesAreCollected(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "writer.sh")
	body := "#!/bin/sh\necho sum > summary.md\necho r > report.txt\necho a > a-notes.txt\necho h > .hidden\n" +
		"mkdir -p sub && echo s > sub/f\nln -sf report.txt link.txt\necho done\n"
	if err := os.WriteFile(prog, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	b := newBrain(t, Config{Command: []string{prog}, WorkRoot: filepath.Join(dir, "work")})
	r := reply(t, b, task("dlg-1"))
	if got, want := names(r.Artifacts), "summary.md=text/markdown; charset=utf-8,a-notes.txt=text/plain; charset=utf-8,report.txt=text/plain; charset=utf-8"; got != want {
		t.Errorf("artifacts %s, want %s", got, want)
	}
	// An ordinary turn collects nothing.
	if r := reply(t, b, turn("and now?", "")); len(r.Artifacts) != 0 {
		t.Errorf("an ordinary turn collected %s", names(r.Artifacts))
	}
}
