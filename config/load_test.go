package config

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestLoadFullSpecConfig loads SPEC §2's bots.yaml and users.yaml (with a
// bot of each brain kind) and checks values and the defaults filled in.
func TestLoadFullSpecConfig(t *testing.T) {
	cfg := mustLoad(t, "testdata/full")
	abs, _ := filepath.Abs("testdata/full")
	if cfg.Dir != abs {
		t.Errorf("Dir = %q, want %q", cfg.Dir, abs)
	}
	wantGateway := Gateway{
		Listen:   "127.0.0.1:8080",
		Database: "switchboard.db",
		Web: WebSettings{SecretEnv: "SWITCHBOARD_WEB_SECRET", AllowedOrigins: []string{}, SecureCookies: true,
			MaxConnectionsPerIP: 100, MaxMessagesPerSecondPerPerson: 5, MaxMessagesPerSecondPerIP: 2},
		Delegation: DelegationLimits{MaxDepth: 3, Cooldown: 30 * time.Second, ContextMessages: 3, Timeout: 5 * time.Minute},
		Crossbot:   CrossbotLimits{Enabled: true, MaxChain: 3, ResponseChance: 0.35, Cooldown: 6 * time.Hour, Burst: 30 * time.Second},
		Retention:  Retention{Anonymous: 30 * 24 * time.Hour},
	}
	if !reflect.DeepEqual(cfg.Gateway, wantGateway) {
		t.Errorf("Gateway = %+v\nwant %+v", cfg.Gateway, wantGateway)
	}
	if got, want := cfg.DatabasePath(), filepath.Join(abs, "switchboard.db"); got != want {
		t.Errorf("DatabasePath = %q, want %q", got, want)
	}

	matty, ok := cfg.Bot("mattyatlas")
	if !ok {
		t.Fatal("no bot mattyatlas")
	}
	tg := matty.Platforms.Telegram
	if tg == nil || tg.TokenEnv != "MATTY_TELEGRAM_TOKEN" || tg.Mode != ModePolling ||
		tg.Webhook.URL != "https://bots.example.com/telegram/mattyatlas" {
		t.Errorf("telegram = %+v", tg)
	}
	if !matty.On("web") || !matty.On("telegram") || !matty.On("discord") || matty.On("slack") {
		t.Errorf("On: web %v telegram %v discord %v", matty.On("web"), matty.On("telegram"), matty.On("discord"))
	}
	if matty.Brain.Timeout != DefaultScriptTimeout || len(matty.Brain.Rules) != 1 {
		t.Errorf("matty brain = %+v", matty.Brain)
	}
	if !reflect.DeepEqual(matty.Delegation.Allow, []string{"finnshipley", "priest"}) {
		t.Errorf("allow = %v", matty.Delegation.Allow)
	}

	finn, _ := cfg.Bot("finnshipley")
	if !reflect.DeepEqual(finn.Delegation.Triggers, DefaultTriggers) {
		t.Errorf("finn triggers = %v, want the defaults", finn.Delegation.Triggers)
	}
	if finn.Groups.SessionScope != ScopeUser || finn.On("telegram") {
		t.Errorf("finn groups %+v, telegram %v", finn.Groups, finn.On("telegram"))
	}
	if finn.Brain.ResumeCommand[4] != "--resume" || finn.Brain.Timeout != 10*time.Minute {
		t.Errorf("finn brain = %+v", finn.Brain)
	}

	priest, _ := cfg.Bot("priest")
	if priest.Name != "priest" {
		t.Errorf("priest name = %q, want the id", priest.Name)
	}
	if b := priest.Brain; b.BaseURL != "http://127.0.0.1:11434/v1" || b.Model != "llama3.2" ||
		b.APIKeyEnv != "OPENAI_API_KEY" || b.ContextMessages != 20 || b.Timeout != 2*time.Minute {
		t.Errorf("priest brain = %+v", b)
	}
	if priest.Groups.SessionScope != ScopeGroup {
		t.Errorf("priest scope = %q", priest.Groups.SessionScope)
	}

	u, ok := cfg.Users.ByIdentity("discord-789012")
	if !ok || u.ID != "user-bryan" || u.Name != "Bryan" {
		t.Errorf("ByIdentity = %+v, %v", u, ok)
	}
	if share, invisible := u.EffectivePrivacy(cfg.Users.Defaults.Privacy); !share || invisible {
		t.Errorf("EffectivePrivacy = %v, %v", share, invisible)
	}
}

// TestLoadDefaults checks every default of an omitted key, and that an
// explicit zero is kept.
func TestLoadDefaults(t *testing.T) {
	cfg := mustLoad(t, writeDir(t, `
gateway:
  crossbot:
    response_chance: 0
  web:
    max_messages_per_second_per_ip: 0
bots:
  - id: s
    brain: {kind: script, default: hi}
  - id: e
    brain: {kind: exec, command: [cat]}
    platforms: {web: , telegram: {token_env: T}}
  - id: o
    brain: {kind: openai, base_url: "http://x", model: m}
    delegation: {triggers: []}
`, "users:\n  - id: u\n    privacy: {invisible: true}\n"))
	want := Gateway{
		Listen:     DefaultListen,
		Database:   DefaultDatabase,
		Web:        WebSettings{MaxConnectionsPerIP: 100, MaxMessagesPerSecondPerPerson: 5, MaxMessagesPerSecondPerIP: 0},
		Delegation: DelegationLimits{MaxDepth: 3, Cooldown: 30 * time.Second, ContextMessages: 3, Timeout: 5 * time.Minute},
		Crossbot:   CrossbotLimits{Enabled: true, MaxChain: 3, ResponseChance: 0, Cooldown: 6 * time.Hour, Burst: 30 * time.Second},
		Retention:  Retention{Anonymous: DefaultRetentionAnonymous},
	}
	if !reflect.DeepEqual(cfg.Gateway, want) {
		t.Errorf("Gateway = %+v\nwant %+v", cfg.Gateway, want)
	}
	s, e, o := cfg.Bots[0], cfg.Bots[1], cfg.Bots[2]
	if s.Name != "s" || s.Groups.SessionScope != ScopeUser || s.Brain.Timeout != 30*time.Second || s.On("web") {
		t.Errorf("script bot = %+v", s)
	}
	if e.Brain.Timeout != 10*time.Minute || !reflect.DeepEqual(e.Brain.ResumeCommand, []string{"cat"}) {
		t.Errorf("exec brain = %+v", e.Brain)
	}
	if !e.On("web") || e.Platforms.Telegram.Mode != ModePolling {
		t.Errorf("exec platforms = %+v", e.Platforms)
	}
	if o.Brain.Timeout != 2*time.Minute || o.Brain.ContextMessages != 20 || len(o.Delegation.Triggers) != 0 {
		t.Errorf("openai bot = %+v", o)
	}
	u := cfg.Users.Users[0]
	if share, invisible := u.EffectivePrivacy(cfg.Users.Defaults.Privacy); !share || !invisible || u.Name != "u" {
		t.Errorf("user %+v: share %v invisible %v", u, share, invisible)
	}
}

// TestLoadCrossbot reads every gateway.crossbot key; a seed of 0 is a
// seed.
func TestLoadCrossbot(t *testing.T) {
	cfg := mustLoad(t, writeDir(t, `
gateway:
  crossbot: {enabled: false, max_chain: 5, response_chance: 1, cooldown: 1m, burst: 0s, seed: 0}
bots:
  - id: s
    brain: {kind: script, default: hi}
`, "users: []\n"))
	want := CrossbotLimits{Enabled: false, MaxChain: 5, ResponseChance: 1, Cooldown: time.Minute, Seed: ptr(0)}
	if !reflect.DeepEqual(cfg.Gateway.Crossbot, want) {
		t.Errorf("Crossbot = %+v\nwant %+v", cfg.Gateway.Crossbot, want)
	}
	if cfg := mustLoad(t, writeDir(t, "bots:\n  - id: s\n    brain: {kind: script, default: hi}\n", "users: []\n")); cfg.Gateway.Crossbot.Seed != nil {
		t.Errorf("an omitted seed = %v, want none", *cfg.Gateway.Crossbot.Seed)
	}
}

// TestLoadExampleFiles loads the bots.yaml and users.yaml of the
// repository root that `make run` uses.
func TestLoadExampleFiles(t *testing.T) {
	cfg := mustLoad(t, "..")
	for _, id := range []string{"mattyatlas", "finnshipley", "priest"} {
		b, ok := cfg.Bot(id)
		if !ok {
			t.Fatalf("no bot %s", id)
		}
		if !b.On("web") || b.Brain.Kind != KindScript || len(b.Brain.Rules) < 3 || b.Brain.Default == "" {
			t.Errorf("bot %s: web %v, brain %s with %d rules", id, b.On("web"), b.Brain.Kind, len(b.Brain.Rules))
		}
	}
	if u, ok := cfg.Users.User("user-bryan"); !ok || len(u.Identities) != 3 {
		t.Errorf("user-bryan = %+v", u)
	}
}

// TestLoadReportsEverything checks that problems in both files come back
// at once, sorted by file and line.
func TestLoadReportsEverything(t *testing.T) {
	errs := loadErrors(t, writeDir(t, `gateway:
  delegation:
    max_depth: many
bots:
  - id: a
    brain: {kind: sript}
  - id: a
    brain: {kind: script, default: hi}
    delegation: {allow: [nobody]}
`, `users:
  - id: u1
    identities: [web-x]
  - id: u2
    identities: [web-x, bryan]
`))
	want := []string{
		"bots.yaml:3: gateway.delegation.max_depth: expected a whole number",
		"bots.yaml:6: bots[0].brain.kind: unknown brain kind",
		"bots.yaml:7: bots[1].id: duplicate bot id",
		"bots.yaml:9: bots[1].delegation.allow[0]: \"nobody\" is not a bot id",
		"users.yaml:5: users[1].identities[0]: identity \"web-x\" is already claimed",
		"users.yaml:5: users[1].identities[1]: \"bryan\" is not a platform ID",
	}
	lines := strings.Split(errs.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(want), errs)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}

// TestLoadFileErrors checks that a missing file is an I/O error, not
// Errors.
func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, BotsFile), minimalBots)
	_, err := Load(dir)
	var errs Errors
	if !errors.Is(err, fs.ErrNotExist) || errors.As(err, &errs) || !strings.Contains(err.Error(), UsersFile) {
		t.Errorf("Load without users.yaml = %v, want a not-exist I/O error naming it", err)
	}
}

// TestLoadAnchors checks that YAML anchors and merge keys work, and that a
// merged-in key is still checked.
func TestLoadAnchors(t *testing.T) {
	cfg := mustLoad(t, writeDir(t, `bots:
  - id: a
    brain: &script {kind: script, default: hi}
  - id: b
    brain:
      <<: *script
      timeout: 5s
`, minimalUsers))
	if b := cfg.Bots[1].Brain; b.Kind != KindScript || b.Default != "hi" || b.Timeout != 5*time.Second {
		t.Errorf("merged brain = %+v", b)
	}
	errs := loadErrors(t, writeDir(t, `bots:
  - id: a
    brain: &script {kind: script, default: hi, colour: red}
  - id: b
    brain: {<<: *script}
`, minimalUsers))
	if e := findError(t, errs, BotsFile, "bots[1].brain.colour"); e.Line != 3 {
		t.Errorf("merged unknown key on line %d, want 3", e.Line)
	}
}

// TestErrorFormat checks Error's format with and without line and key.
func TestErrorFormat(t *testing.T) {
	tests := []struct {
		err  Error
		want string
	}{
		{Error{File: "bots.yaml", Line: 14, Key: "bots[1].brain.kind", Message: "m"}, "bots.yaml:14: bots[1].brain.kind: m"},
		{Error{File: "bots.yaml", Key: "bots", Message: "m"}, "bots.yaml: bots: m"},
		{Error{File: "users.yaml", Message: "file is empty"}, "users.yaml: file is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
	errs := Errors{{File: "users.yaml", Line: 1, Message: "c"}, {File: "bots.yaml", Line: 9, Message: "b"}, {File: "bots.yaml", Line: 2, Message: "a"}}
	if got, want := errs.Error(), "bots.yaml:2: a\nbots.yaml:9: b\nusers.yaml:1: c"; got != want {
		t.Errorf("Errors.Error() = %q, want %q", got, want)
	}
}

// TestDatabasePath checks how gateway.database is resolved.
func TestDatabasePath(t *testing.T) {
	tests := []struct{ db, want string }{
		{"switchboard.db", "/etc/sb/switchboard.db"},
		{"data/sb.db", "/etc/sb/data/sb.db"},
		{"/var/lib/sb.db", "/var/lib/sb.db"},
		{"file:sb.db?mode=rwc", "file:sb.db?mode=rwc"},
		{":memory:", ":memory:"},
		{"", ""}, // gateway.database_env is set
	}
	for _, tt := range tests {
		t.Run(tt.db, func(t *testing.T) {
			c := &Config{Dir: "/etc/sb", Gateway: Gateway{Database: tt.db}}
			if got := c.DatabasePath(); got != tt.want {
				t.Errorf("DatabasePath() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEffectivePrivacy checks the user, defaults, built-in order.
func TestEffectivePrivacy(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	tests := []struct {
		name                string
		user, def           Privacy
		wantShare, wantInvi bool
	}{
		{"built-in", Privacy{}, Privacy{}, true, false},
		{"defaults", Privacy{}, Privacy{ShareWithOtherBots: no, Invisible: yes}, false, true},
		{"user wins", Privacy{ShareWithOtherBots: yes, Invisible: no}, Privacy{ShareWithOtherBots: no, Invisible: yes}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			share, invisible := User{Privacy: tt.user}.EffectivePrivacy(tt.def)
			if share != tt.wantShare || invisible != tt.wantInvi {
				t.Errorf("got %v, %v; want %v, %v", share, invisible, tt.wantShare, tt.wantInvi)
			}
		})
	}
}

// Templates may call the script brain's helpers; unknown functions are
// still errors.
func TestTemplateHelpers(t *testing.T) {
	ok := "bots:\n  - id: a\n    brain: {kind: script, default: '{{lower .Text}} {{join .Match \", \"}}'}\n"
	mustLoad(t, writeDir(t, ok, minimalUsers))
	bad := "bots:\n  - id: a\n    brain: {kind: script, default: '{{shout .Text}}'}\n"
	errs := loadErrors(t, writeDir(t, bad, minimalUsers))
	if len(errs) != 1 || errs[0].Key != "bots[0].brain.default" || !strings.Contains(errs[0].Message, "shout") {
		t.Errorf("errors = %v", errs)
	}
}
