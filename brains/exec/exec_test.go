package exec

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/switchboard-chat/switchboard/brains"
)

// newBrain builds a brain running the fake CLI with a temporary work root.
func newBrain(t *testing.T, cfg Config) *Brain {
	t.Helper()
	cfg.Env = append(cfg.Env, "GORACE")
	if cfg.WorkRoot == "" {
		cfg.WorkRoot = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// sessionDir is the working directory b gives session id.
func sessionDir(t *testing.T, b *Brain, id string) string {
	t.Helper()
	dir, err := b.sessionDir(id)
	if err != nil {
		t.Fatalf("sessionDir: %v", err)
	}
	return dir
}

// turn is an ordinary private turn of session s1.
func turn(text, resumeID string) brains.Turn {
	return brains.Turn{
		SessionID: "s1",
		ResumeID:  resumeID,
		Bot:       brains.Bot{ID: "finn", Name: "Finn Shipley", Persona: "You build things."},
		User:      brains.User{ID: "u1", Name: "Ann"},
		Platform:  "web",
		Text:      text,
	}
}

// reply runs one turn or fails the test.
func reply(t *testing.T, b *Brain, tn brains.Turn) brains.Reply {
	t.Helper()
	r, err := b.Reply(context.Background(), tn)
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	return r
}

func TestResumeAcrossTurnsAndRestart(t *testing.T) {
	cfg := Config{
		Command:       fake("new", "session={session}"),
		ResumeCommand: fake("resume", "session={session}"),
		WorkRoot:      t.TempDir(),
	}
	b := newBrain(t, cfg)
	first := reply(t, b, turn("hi", ""))
	if _, err := uuid.Parse(first.ResumeID); err != nil {
		t.Fatalf("first ResumeID = %q, want the new UUID", first.ResumeID)
	}
	if want := "turn 1 of " + first.ResumeID; first.Text != want {
		t.Fatalf("first Text = %q, want %q", first.Text, want)
	}
	second := reply(t, b, turn("again", first.ResumeID))
	if want := "turn 2 of " + first.ResumeID; second.Text != want || second.ResumeID != first.ResumeID {
		t.Fatalf("second = %q / %q, want %q / same ID", second.Text, second.ResumeID, want)
	}
	// A restart: a new Brain value, given only the stored ID.
	restarted := newBrain(t, cfg)
	third := reply(t, restarted, turn("after restart", second.ResumeID))
	if want := "turn 3 of " + first.ResumeID; third.Text != want {
		t.Fatalf("after restart Text = %q, want %q", third.Text, want)
	}
}

func TestJSONSessionIDIsStored(t *testing.T) {
	cfg := Config{
		// The CLI names its own session, as claude does with --resume.
		Command:       fake("new", "session={session}", "sid=cli-{session}", "out=json"),
		ResumeCommand: fake("resume", "session={session}", "out=json"),
		WorkRoot:      t.TempDir(),
	}
	first := reply(t, newBrain(t, cfg), turn("hi", ""))
	if !strings.HasPrefix(first.ResumeID, "cli-") {
		t.Fatalf("ResumeID = %q, want the CLI's session_id", first.ResumeID)
	}
	second := reply(t, newBrain(t, cfg), turn("again", first.ResumeID))
	if want := "turn 2 of " + first.ResumeID; second.Text != want {
		t.Fatalf("resumed Text = %q, want %q", second.Text, want)
	}
	if second.ResumeID != first.ResumeID {
		t.Errorf("ResumeID changed to %q without a new session_id", second.ResumeID)
	}
}

func TestLostSessionStartsAnew(t *testing.T) {
	b := newBrain(t, Config{
		Command:       fake("new", "session={session}"),
		ResumeCommand: fake("resume", "session={session}"),
	})
	r := reply(t, b, turn("hi", "gone-after-reinstall"))
	if r.ResumeID == "gone-after-reinstall" || !strings.HasPrefix(r.Text, "turn 1 of ") {
		t.Errorf("reply = %q / %q, want a new session's first turn", r.Text, r.ResumeID)
	}
}

func TestOutputFormats(t *testing.T) {
	tests := []struct {
		out     string
		want    string
		wantErr string
	}{
		{out: "text", want: "turn 0 of abc"},
		{out: "json", want: "turn 0 of abc"},
		{out: "jsonl", want: "turn 0 of abc"},
		{out: "iserror", wantErr: "reported an error (error_during_execution)"},
		{out: "noresult", wantErr: `no "result"`},
		{out: "empty", wantErr: "printed nothing"},
		{out: "binary", wantErr: "not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.out, func(t *testing.T) {
			b := newBrain(t, Config{Command: fake("session=abc", "out="+tt.out)})
			r, err := b.Reply(context.Background(), turn("hi", ""))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if r.Text != tt.want {
				t.Errorf("Text = %q, want %q", r.Text, tt.want)
			}
		})
	}
}

func TestPromptOnStdin(t *testing.T) {
	history := []brains.Entry{
		{Kind: "human", From: "Ann", Text: "old question"},
		{Kind: "bot", From: "Finn Shipley", Text: "old answer"},
		{Kind: "system", From: "delegation", Text: "[Bot @priest completed] Task: review Result: ok"},
	}
	tests := []struct {
		name      string
		resumeCmd []string
		resumeID  string
		want      []string
		absent    []string
	}{
		{"first turn has all history", fake("echo"), "",
			[]string{"You build things.", "old question", "old answer", "[Bot @priest completed]", "=== NEW MESSAGE ===\nFrom Ann:\nwhat now?"}, nil},
		// The CLI resumes its own session and already holds the rest.
		{"resumed turn has only what the CLI missed", fake("echo", "session={session}"), "r1",
			[]string{"You build things.", "[Bot @priest completed]", "what now?"}, []string{"old question", "old answer"}},
		{"a CLI that cannot resume always gets all", fake("echo"), "r1",
			[]string{"old question", "old answer"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBrain(t, Config{Command: fake("echo"), ResumeCommand: tt.resumeCmd})
			tn := turn("what now?", tt.resumeID)
			tn.History = history
			r := reply(t, b, tn)
			for _, w := range tt.want {
				if !strings.Contains(r.Text, w) {
					t.Errorf("prompt lacks %q:\n%s", w, r.Text)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(r.Text, a) {
					t.Errorf("prompt has %q:\n%s", a, r.Text)
				}
			}
		})
	}
}

func TestNonZeroExit(t *testing.T) {
	b := newBrain(t, Config{Command: fake("exit=3", "stderr=boom: model on fire")})
	_, err := b.Reply(context.Background(), turn("hi", ""))
	var exit *ExitError
	if !errors.As(err, &exit) || exit.Code != 3 {
		t.Fatalf("err = %v, want an *ExitError with code 3", err)
	}
	if !strings.Contains(exit.Stderr, "boom: model on fire") {
		t.Errorf("ExitError.Stderr = %q, want the stderr tail", exit.Stderr)
	}
	// The gateway logs the error above debug level: no child output in it.
	if strings.Contains(err.Error(), "boom") {
		t.Errorf("the error carries the program's stderr: %v", err)
	}
}

func TestStderrIsTruncated(t *testing.T) {
	b := newBrain(t, Config{Command: fake("exit=1", "stderrbytes=20000")})
	_, err := b.Reply(context.Background(), turn("hi", ""))
	var exit *ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("err = %v, want an *ExitError", err)
	}
	if len(exit.Stderr) > StderrTail+len("…") || !strings.HasSuffix(exit.Stderr, "END") || strings.Contains(exit.Stderr, "START") {
		t.Errorf("stderr kept %d bytes (%.20q…%.20q), want the last %d", len(exit.Stderr), exit.Stderr, exit.Stderr[len(exit.Stderr)-20:], StderrTail)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"ok", Config{Command: []string{"claude", "-p"}}, ""},
		{"no command", Config{}, "command is empty"},
		{"empty program", Config{Command: []string{""}}, "command is empty"},
		{"empty resume program", Config{Command: []string{"x"}, ResumeCommand: []string{"", "a"}}, "resume_command"},
		{"bad env name", Config{Command: []string{"x"}, Env: []string{"A=B"}}, "not a variable name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("New: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestMissingProgram(t *testing.T) {
	b := newBrain(t, Config{Command: []string{"switchboard-no-such-cli-xyz"}})
	_, err := b.Reply(context.Background(), turn("hi", ""))
	if err == nil || !strings.Contains(err.Error(), "switchboard-no-such-cli-xyz") {
		t.Errorf("err = %v, want one naming the program", err)
	}
}

func TestWorkdir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "work")
	b := newBrain(t, Config{Command: fake(), WorkRoot: root})
	reply(t, b, turn("hi", ""))
	dir := sessionDir(t, b, "s1")
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{root, 0o700}, {dir, 0o700}, {filepath.Join(root, keyFile), 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, fi.Mode().Perm(), c.mode)
		}
	}
	// Named by the session, never as the session ID itself.
	name := filepath.Base(dir)
	if prefix, mac, ok := strings.Cut(name, "-"); !ok || prefix != "s1" || len(mac) != 32 {
		t.Errorf("directory name %q, want s1-<32 hex digits>", name)
	}
	// A program that opened its directory up finds it closed again.
	os.Chmod(dir, 0o755)
	reply(t, b, turn("again", ""))
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("after a chmod by the program: mode %v, want 0700 again", fi.Mode().Perm())
	}
	// The same root gives the same name after a restart; another root's
	// key another name.
	if again := sessionDir(t, newBrain(t, Config{Command: fake(), WorkRoot: root}), "s1"); again != dir {
		t.Errorf("after a restart: %s, want %s", again, dir)
	}
	if other := sessionDir(t, newBrain(t, Config{Command: fake()}), "s1"); filepath.Base(other) == name {
		t.Errorf("two work roots name session s1 alike: %s", name)
	}
}

func TestWorkdirMigration(t *testing.T) {
	root := t.TempDir()
	legacy := filepath.Join(root, "s1")
	os.Mkdir(legacy, 0o700)
	os.WriteFile(filepath.Join(legacy, "notes.md"), []byte("kept"), 0o600)
	b := newBrain(t, Config{Command: fake(), WorkRoot: root})
	reply(t, b, turn("hi", ""))
	if got, err := os.ReadFile(filepath.Join(sessionDir(t, b, "s1"), "notes.md")); string(got) != "kept" {
		t.Errorf("the session's file after the rename: %q, %v", got, err)
	}
	if _, err := os.Lstat(legacy); !os.IsNotExist(err) {
		t.Errorf("the directory named after the session ID is still there: %v", err)
	}
}

func TestWorkdirKey(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, keyFile), []byte("short"), 0o600)
	b := newBrain(t, Config{Command: fake(), WorkRoot: root})
	_, err := b.Reply(context.Background(), turn("hi", ""))
	if err == nil || !strings.Contains(err.Error(), "is not a 32-byte key") {
		t.Errorf("err = %v, want the damaged key named", err)
	}
}

func TestDirName(t *testing.T) {
	tests := []struct {
		id   string
		keep bool
	}{
		{"s1", true},
		{"sess-0193a.b_c", true},
		{"../etc", false},
		{"a/b", false},
		{".hidden", false},
		{"", false},
		{"telegram:123", false},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := legacyDirName(tt.id)
		if (got == tt.id) != tt.keep {
			t.Errorf("dirName(%q) = %q, keep = %v", tt.id, got, tt.keep)
		}
		if got == "" || got == "." || got == ".." || strings.ContainsAny(got, `/\`) || strings.HasPrefix(got, ".") {
			t.Errorf("dirName(%q) = %q is not a safe path element", tt.id, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("dirName(%q) = dirName(%q) = %q", tt.id, other, got)
		}
		seen[got] = tt.id
	}
	if legacyDirName("a/b") == legacyDirName("a_b") {
		t.Error("a/b and a_b share a directory")
	}
}
