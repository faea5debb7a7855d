package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-chat/switchboard/brains"
)

// memFiles is the gateway's artifact reader: content by artifact ID.
type memFiles map[string]string

func (m memFiles) ReadFile(_ context.Context, id string) ([]byte, error) {
	c, ok := m[id]
	if !ok {
		return nil, fmt.Errorf("artifact %s: not found", id)
	}
	return []byte(c), nil
}

// chainStep is a done chain step producing outputs, each "ID:name".
func chainStep(n int, producer string, outputs ...string) brains.ChainStep {
	s := brains.ChainStep{Step: n, Producer: producer, ProducerID: strings.ToLower(producer), Status: "done"}
	for _, o := range outputs {
		id, name, _ := strings.Cut(o, ":")
		s.Outputs = append(s.Outputs, brains.Artifact{ID: id, Name: name})
	}
	return s
}

// chainTurn is an ordinary turn of session s1 in a space whose chain
// is steps, the artifacts read from files.
func chainTurn(files brains.Files, steps ...brains.ChainStep) brains.Turn {
	tn := turn("check the comparison", "")
	tn.Shared = &brains.SharedContext{Chain: steps}
	tn.Files = files
	return tn
}

// The program finds the newest output of each name of the chain under
// artifacts/; an output that cannot be read or whose name is a path is
// logged and left out, and the turn goes on.
func TestChainOutputsUnderArtifacts(t *testing.T) {
	var logs logLines
	root := t.TempDir()
	b := newBrain(t, Config{Command: fake("artifacts"), WorkRoot: filepath.Join(root, "work"), Logger: logs.logger()})
	files := memFiles{"a1": `{"v":1}`, "a2": "compared", "a3": `{"v":2}`, "a5": "escaped"}
	tn := chainTurn(files,
		chainStep(1, "Researcher", "a1:competitors.json"),
		chainStep(2, "Coder", "a2:api-comparison.json"),
		chainStep(3, "Researcher", "a3:competitors.json", "a4:lost.json"),
		chainStep(4, "Coder", "a5:../escape.json"),
	)
	r := reply(t, b, tn)
	want := "dir 700\n" +
		"api-comparison.json 600 compared\n" +
		`competitors.json 600 {"v":2}`
	if r.Text != want {
		t.Errorf("the program found:\n%s\nwant:\n%s", r.Text, want)
	}
	if !logs.has("chain output not written", "name=lost.json", "artifact=a4") {
		t.Errorf("no warning for the unreadable output in:\n%s", logs.buf.String())
	}
	if !logs.has("chain output not written", "escape.json") {
		t.Errorf("no warning for the output named by a path in:\n%s", logs.buf.String())
	}
	if _, err := os.Stat(filepath.Join(root, "work", "escape.json")); err == nil {
		t.Error("an output named by a path was written outside artifacts/")
	}

	// The prompt tells the program where the files are.
	echo := newBrain(t, Config{Command: fake("echo"), WorkRoot: filepath.Join(root, "work")})
	r = reply(t, echo, tn)
	for _, s := range []string{"SHARED CONTEXT\nArtifact chain: 1. Researcher produced competitors.json from —;", "artifacts/competitors.json, artifacts/api-comparison.json"} {
		if !strings.Contains(r.Text, s) {
			t.Errorf("the prompt lacks %q:\n%s", s, r.Text)
		}
	}
}

// artifacts/ holds the turn's chain and nothing else: files of an older
// chain and the program's own are gone next turn, and a turn without
// chain outputs has no artifacts/.
func TestChainArtifactsReplaced(t *testing.T) {
	b := newBrain(t, Config{Command: fake("artifacts", "scribble")})
	files := memFiles{"a1": "old", "a2": "new"}
	if r := reply(t, b, chainTurn(files, chainStep(1, "Researcher", "a1:old.json"))); r.Text != "dir 700\nold.json 600 old" {
		t.Fatalf("first turn found:\n%s", r.Text)
	}
	dir := sessionDir(t, b, "s1")
	if got, err := os.ReadFile(filepath.Join(dir, "artifacts", "mine.txt")); err != nil || string(got) != "mine" {
		t.Fatalf("the program's own file: %q, %v", got, err)
	}
	// What a turn that crashed half-way leaves.
	os.MkdirAll(filepath.Join(dir, stagingPrefix+"0123456789abcdef", "sub"), 0o700)

	if r := reply(t, b, chainTurn(files, chainStep(2, "Coder", "a2:new.json"))); r.Text != "dir 700\nnew.json 600 new" {
		t.Errorf("second turn found:\n%s\nwant new.json alone", r.Text)
	}
	if r := reply(t, b, turn("no chain here", "")); r.Text != "no artifacts" {
		t.Errorf("a turn without a chain found:\n%s", r.Text)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagingPrefix) || e.Name() == "artifacts" {
			t.Errorf("%s left in the working directory", e.Name())
		}
	}
}

// A program that replaced artifacts/ with a symlink does not make the
// gateway write, or remove, anything where it points.
func TestChainArtifactsSymlinkNotFollowed(t *testing.T) {
	for _, target := range []string{"dir", "file", "self"} {
		t.Run(target, func(t *testing.T) {
			root := t.TempDir()
			outside := filepath.Join(root, "outside")
			os.MkdirAll(outside, 0o700)
			os.WriteFile(filepath.Join(outside, "keep.txt"), []byte("keep"), 0o600)
			b := newBrain(t, Config{Command: fake("artifacts"), WorkRoot: filepath.Join(root, "work")})
			dir := sessionDir(t, b, "s1")
			os.MkdirAll(dir, 0o700)
			link := map[string]string{"dir": outside, "file": filepath.Join(outside, "keep.txt"), "self": "."}[target]
			if err := os.Symlink(link, filepath.Join(dir, "artifacts")); err != nil {
				t.Fatal(err)
			}

			r := reply(t, b, chainTurn(memFiles{"a1": "[]"}, chainStep(1, "Researcher", "a1:competitors.json")))
			if r.Text != "dir 700\ncompetitors.json 600 []" {
				t.Errorf("the program found:\n%s", r.Text)
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 || entries[0].Name() != "keep.txt" {
				t.Errorf("the symlink's target was written to or emptied: %v", entries)
			}
			if _, err := os.Stat(filepath.Join(dir, "competitors.json")); err == nil {
				t.Error("an output was written through a symlink to the working directory")
			}
			if fi, err := os.Lstat(filepath.Join(dir, "artifacts")); err != nil || !fi.IsDir() {
				t.Errorf("artifacts/ after the turn: %v, %v; want a directory", fi, err)
			}
		})
	}
}

// Outputs of the chain are inputs to read, never outputs of the turn: a
// delegated turn expecting a name the chain has collects only what the
// program wrote itself.
func TestChainArtifactsNotCollected(t *testing.T) {
	root := t.TempDir()
	files := memFiles{"a1": "upstream"}
	tn := task("dlg-1")
	tn.Shared = &brains.SharedContext{Chain: []brains.ChainStep{chainStep(1, "Researcher", "a1:competitors.json", "a1:summary.md")}}
	tn.Files = files
	idle := newBrain(t, Config{Command: fake(), WorkRoot: root})
	if r := reply(t, idle, tn); len(r.Artifacts) != 0 {
		t.Errorf("a program that wrote nothing produced %s", names(r.Artifacts))
	}
	produce := newBrain(t, Config{Command: fake("produce"), WorkRoot: root})
	tn.Delegation.ID = "dlg-2"
	r := reply(t, produce, tn)
	if len(r.Artifacts) != 2 || string(r.Artifacts[0].Content) != `{"notes":"we sell bots"}` {
		t.Errorf("collected %s (%q), want the program's own two files", names(r.Artifacts), r.Artifacts)
	}
}

// A turn whose chain names outputs but that has no way to read them
// runs without the files.
func TestChainArtifactsWithoutFiles(t *testing.T) {
	var logs logLines
	b := newBrain(t, Config{Command: fake("artifacts"), Logger: logs.logger()})
	r := reply(t, b, chainTurn(nil, chainStep(1, "Researcher", "a1:competitors.json")))
	if r.Text != "dir 700" {
		t.Errorf("the program found:\n%s\nwant an empty artifacts/", r.Text)
	}
	if !logs.has("chain output not written", "competitors.json") {
		t.Errorf("no warning in:\n%s", logs.buf.String())
	}
}
