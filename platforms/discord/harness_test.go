package discord_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/brains/script"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/platforms/discord"
	"github.com/switchboard-chat/switchboard/platforms/discord/discordtest"
	"github.com/switchboard-chat/switchboard/sessions"
	"github.com/switchboard-chat/switchboard/store/sqlite"
)

// Two bots with Discord accounts on the fake.
const (
	mattyToken = "tok-matty"
	mattyUser  = "9001"
	finnToken  = "tok-finn"
	finnUser   = "9002"
)

var (
	alice = discordtest.User{ID: "111", Username: "alice", GlobalName: "Alice"}
	// longReply is exactly Discord's limit, in two-byte characters.
	longReply = strings.Repeat("é", discord.MaxMessageLength-10) + "0123456789"
	// splitReply is over the limit and must arrive in two parts.
	splitReply = strings.TrimSpace(strings.Repeat("lorem ipsum ", 250))
)

// env is the real core (gateway, SQLite store, script brains) driving the
// Discord adapter against the fake.
type env struct {
	t     *testing.T
	srv   *discordtest.Server
	p     *discord.Platform
	gw    *gateway.Gateway
	store *sqlite.Store
}

// in returns e reporting to t (a subtest).
func (e *env) in(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// waitStored waits until the outbox has recorded a posted message's
// Discord ID, so a reply to it is recognized as a reply to the bot.
func (e *env) waitStored(m discordtest.SentMessage) {
	e.t.Helper()
	eventually(e.t, func() bool {
		_, ok, err := e.store.BotOfMessage(context.Background(), gateway.PlatformDiscord, m.ChannelID, m.ID)
		return ok && err == nil
	}, "message %s stored", m.ID)
}

// newEnv starts the gateway with matty and finn on Discord and runs the
// adapter with the given bots configured. opts tune the adapter.
func newEnv(t *testing.T, opts discord.Options, bots ...string) *env {
	t.Helper()
	return newEnvOn(t, discordtest.New(t), opts, bots...)
}

// newEnvOn is newEnv on a fake the caller has set up.
func newEnvOn(t *testing.T, srv *discordtest.Server, opts discord.Options, bots ...string) *env {
	t.Helper()
	srv.AddBot(mattyToken, mattyUser, "matty")
	srv.AddBot(finnToken, finnUser, "finn")
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "sb.db"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, store: st}
	logger := testLogger()
	e.gw = gateway.New(gateway.Options{Store: st, Sessions: st, Outbox: st, Logger: logger})
	e.gw.SetRoster(gateway.NewRoster([]*gateway.Bot{scriptBot(t, "matty", "Matty"), scriptBot(t, "finn", "Finn")}))
	if opts.Logger == nil {
		opts.Logger = logger
	}
	e.p = discord.New(opts)
	e.p.Configure(e.configs(bots...))
	e.gw.AddPlatform(e.p)
	if err := e.gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- e.p.Run(ctx, e.gw) }()
	t.Cleanup(func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer dcancel()
		e.gw.Drain(dctx)
		e.gw.Flush(dctx)
		cancel()
		select {
		case err := <-ran:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
		st.Close()
	})
	for _, b := range bots {
		e.waitConnected(tokenOf(b))
	}
	return e
}

// testLogger discards logs unless the tests run with -v.
func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.Default()
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func tokenOf(bot string) string {
	if bot == "finn" {
		return finnToken
	}
	return mattyToken
}

// configs are the adapter settings of the named bots on the fake.
func (e *env) configs(bots ...string) []discord.BotConfig {
	var out []discord.BotConfig
	for _, b := range bots {
		out = append(out, discord.BotConfig{BotID: b, Token: tokenOf(b), APIURL: e.srv.APIURL()})
	}
	return out
}

func scriptBot(t *testing.T, id, name string) *gateway.Bot {
	brain, err := script.New(script.Config{
		Rules: []script.Rule{
			{Match: `^long$`, Reply: longReply},
			{Match: `^split$`, Reply: splitReply},
		},
		Default: `{{.Bot.Name}} heard: {{.Text}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &gateway.Bot{
		ID: id, Name: name, Brain: brain, BrainKind: "script", Platforms: []string{gateway.PlatformDiscord},
		SessionScope: sessions.ScopeUser, Timeout: 5 * time.Second,
	}
}

// next waits for the next message a bot posts.
func (e *env) next() discordtest.SentMessage {
	e.t.Helper()
	select {
	case m := <-e.srv.Messages():
		return m
	case <-time.After(15 * time.Second):
		e.t.Fatal("timed out waiting for a bot to post")
		return discordtest.SentMessage{}
	}
}

// expect waits for the next post and checks its channel and text.
func (e *env) expect(channel, text string) discordtest.SentMessage {
	e.t.Helper()
	m := e.next()
	if m.ChannelID != channel || m.Content != text {
		e.t.Fatalf("posted %q in %s, want %q in %s", m.Content, m.ChannelID, text, channel)
	}
	return m
}

// quiet checks that no bot posts for d.
func (e *env) quiet(d time.Duration) {
	e.t.Helper()
	select {
	case m := <-e.srv.Messages():
		e.t.Fatalf("unexpected post %q in %s", m.Content, m.ChannelID)
	case <-time.After(d):
	}
}

func (e *env) waitConnected(token string) {
	e.t.Helper()
	eventually(e.t, func() bool { return e.srv.Connected(token) }, "bot %s connected", token)
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: "+format, args...)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
