package config

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openaiBot is bots.yaml with one openai bot whose base_url is on line 5.
func openaiBot(baseURL string) string {
	return "bots:\n  - id: o\n    brain:\n      kind: openai\n      base_url: " + baseURL + "\n      model: m\n"
}

// TestBaseURLWarning: a base_url whose path is not an API root is a
// warning at its line, and the configuration still loads.
func TestBaseURLWarning(t *testing.T) {
	tests := []struct {
		baseURL string
		warn    string // "": no warning
	}{
		{"http://127.0.0.1:11434/v1", ""},
		{"http://127.0.0.1:11434/v1/", ""},
		{"https://api.openai.com/v1", ""},
		{"https://api.groq.com/openai/v1", ""},
		{"https://openrouter.ai/api/v1", ""},
		{"https://generativelanguage.googleapis.com/v1beta/openai/", ""},
		{"https://api.deepinfra.com/v1/openai", ""},
		{"https://api.fireworks.ai/inference/v1", ""},
		{"https://example.openai.azure.com/openai/v1?api-version=preview", ""},
		{"http://localhost:8000/v2", ""},
		{"https://api.deepseek.com", ""},
		{"https://models.github.ai/inference", ""},
		{
			"http://127.0.0.1:11434",
			`"http://127.0.0.1:11434" does not end in an API version such as /v1, so requests go to http://127.0.0.1:11434/chat/completions, ` +
				"which most servers do not serve (Ollama, llama.cpp, vLLM and OpenAI answer under /v1, Groq under /openai/v1, " +
				"OpenRouter under /api/v1, Gemini under /v1beta/openai) (did you mean http://127.0.0.1:11434/v1?)",
		},
		{"http://127.0.0.1:8080/", "(did you mean http://127.0.0.1:8080/v1?)"},
		{"https://llm.example.com/api", `"https://llm.example.com/api" does not end in an API version`},
		{"https://api.groq.com/openai", "does not end in an API version"},
		{
			"http://127.0.0.1:11434/v1/chat/completions",
			`"http://127.0.0.1:11434/v1/chat/completions" is the chat-completions endpoint itself; base_url is the API root, ` +
				"to which the brain adds /chat/completions (did you mean http://127.0.0.1:11434/v1?)",
		},
		// User info and query are never repeated: they may hold a secret.
		{"http://bob:hunter2@127.0.0.1:11434", `"http://127.0.0.1:11434" does not end`},
		{"https://llm.example.com/api?key=hunter2", `"https://llm.example.com/api" does not end in an API version such as /v1, so requests go to https://llm.example.com/api/chat/completions,`},
	}
	for _, tt := range tests {
		t.Run(tt.baseURL, func(t *testing.T) {
			cfg := mustLoad(t, writeDir(t, openaiBot(tt.baseURL), minimalUsers))
			if tt.warn == "" {
				if len(cfg.Warnings) > 0 {
					t.Errorf("warnings: %v", cfg.Warnings)
				}
				return
			}
			if len(cfg.Warnings) != 1 {
				t.Fatalf("warnings: %v, want one", cfg.Warnings)
			}
			w := cfg.Warnings[0]
			if !w.Warning || w.File != BotsFile || w.Line != 5 || w.Key != "bots[0].brain.base_url" || !strings.Contains(w.Message, tt.warn) {
				t.Errorf("warning %+v\nwant one at bots.yaml:5 bots[0].brain.base_url containing %q", w, tt.warn)
			}
			if strings.Contains(w.Error(), "hunter2") {
				t.Errorf("the warning shows the password: %s", w.Error())
			}
			if want := "bots.yaml:5: bots[0].brain.base_url: warning: "; !strings.HasPrefix(w.Error(), want) {
				t.Errorf("Error() = %q, want prefix %q", w.Error(), want)
			}
		})
	}
}

// With errors, warnings are reported among them, in line order; they
// never fail a load alone.
func TestWarningsWithErrors(t *testing.T) {
	bots := openaiBot("http://h:1") + "  - id: o\n    brain: {kind: script, default: hi}\n"
	errs := loadErrors(t, writeDir(t, bots, minimalUsers))
	if len(errs) != 2 || !errs[0].Warning || errs[0].Line != 5 || errs[1].Warning || errs[1].Key != "bots[1].id" {
		t.Errorf("errors = %#v", errs)
	}
}

// fieldCheck is a BrainCheck that reports a fixed finding.
func fieldCheck(fs ...Finding) BrainCheck {
	return func(*Brain) []Finding { return fs }
}

// TestBrainCheck: a check given to Load reports against the brain's key
// path and the line in the file the finding's own line falls on.
func TestBrainCheck(t *testing.T) {
	const bots = `bots:
  - id: a
    brain:
      kind: script
      rules:
        - match: hi
          reply: |
            Hello
            {{.User.Nmae}}
        - match: x
          reply: "{{.Txt}}"
        - match: y
          reply: >
            folded
            {{.Bad}}
      default: '{{if}}'
`
	dir := writeDir(t, bots, minimalUsers)
	_, err := Load(dir, WithBrainCheck(KindScript, fieldCheck(
		Finding{Key: "rules[0].reply", Line: 2, Message: "unknown field .User.Nmae"},
		Finding{Key: "rules[0].reply", Line: 1, Message: "a second finding of one key"},
		Finding{Key: "rules[1].reply", Line: 1, Message: "unknown field .Txt"},
		// Folded text moves lines: the key's own line is used.
		Finding{Key: "rules[2].reply", Line: 2, Message: "unknown field .Bad"},
		// Config's own parse check said it first: dropped.
		Finding{Key: "default", Line: 1, Message: "invalid template: missing value for if"},
		Finding{Key: "rules[0]", Message: "a note", Warning: true},
	)), WithBrainCheck(KindExec, fieldCheck(Finding{Key: "command", Message: "never called"})))
	errs, ok := err.(Errors)
	if !ok {
		t.Fatalf("Load: %v", err)
	}
	want := []string{
		"bots.yaml:6: bots[0].brain.rules[0]: warning: a note",
		"bots.yaml:8: bots[0].brain.rules[0].reply: a second finding of one key",
		"bots.yaml:9: bots[0].brain.rules[0].reply: unknown field .User.Nmae",
		"bots.yaml:11: bots[0].brain.rules[1].reply: unknown field .Txt",
		"bots.yaml:13: bots[0].brain.rules[2].reply: unknown field .Bad",
		"bots.yaml:16: bots[0].brain.default: invalid template: line 1: missing value for if",
	}
	if got := strings.Split(errs.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A brain check that finds only warnings does not stop the load.
	cfg, err := Load(writeDir(t, minimalBots, minimalUsers), WithBrainCheck(KindScript, fieldCheck(Finding{Key: "default", Message: "hm", Warning: true})))
	if err != nil || len(cfg.Warnings) != 1 || cfg.Warnings[0].Error() != "bots.yaml:3: bots[0].brain.default: warning: hm" {
		t.Errorf("Load = %v, %v", cfg, err)
	}
}

// TestWatcherChecksAndWarns: a Watcher's reloads run the same brain
// checks as its first load, and each load logs its warnings.
func TestWatcherChecksAndWarns(t *testing.T) {
	dir := writeDir(t, openaiBot("http://127.0.0.1:11434"), minimalUsers)
	logs := &logBuffer{}
	noTypo := WithBrainCheck(KindScript, func(b *Brain) []Finding {
		if strings.Contains(b.Default, "Nmae") {
			return []Finding{{Key: "default", Line: 1, Message: "unknown field .User.Nmae (did you mean .User.Name?)"}}
		}
		return nil
	})
	w, err := NewWatcher(context.Background(), dir, slog.New(slog.NewTextHandler(logs, nil)), noTypo)
	if err != nil {
		t.Fatal(err)
	}
	if !logs.contains("level=WARN", "does not end in an API version", "key=bots[0].brain.base_url", "line=5") {
		t.Errorf("no warning logged at the first load; log:\n%s", logs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(3 * debounceQuiet)

	old := w.Current()
	writeFile(t, filepath.Join(dir, BotsFile), "bots:\n  - id: a\n    brain: {kind: script, default: '{{.User.Nmae}}'}\n")
	if !waitFor(liveWithin, func() bool {
		return logs.contains("edit rejected", "bots.yaml:3: bots[0].brain.default: unknown field .User.Nmae (did you mean .User.Name?)")
	}) {
		t.Fatalf("the typo was not rejected; log:\n%s", logs)
	}
	if w.Current() != old {
		t.Fatal("config replaced by an edit its brain check refused")
	}
	writeFile(t, filepath.Join(dir, BotsFile), openaiBot("http://127.0.0.1:8080/"))
	if !waitFor(liveWithin, func() bool { return logs.contains("level=WARN", "did you mean http://127.0.0.1:8080/v1?") }) {
		t.Fatalf("no warning logged at the reload; log:\n%s", logs)
	}
}
