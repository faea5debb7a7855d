package discord_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/platforms/discord"
)

// TestConfigureWhileRunning adds finn to a running adapter, changes his
// settings, then removes matty: each change touches only its bot.
func TestConfigureWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, discord.Options{}, "matty")

	both := e.configs("matty", "finn")
	e.p.Configure(both)
	e.waitConnected(finnToken)
	fm := e.srv.DM(finnToken, alice, "hi finn")
	e.srv.Dispatch(finnToken, fm)
	e.expect(fm.ChannelID, "Finn heard: hi finn")
	mm := e.srv.DM(mattyToken, alice, "hi matty")
	e.srv.Dispatch(mattyToken, mm)
	e.expect(mm.ChannelID, "Matty heard: hi matty")

	// The same settings again change nothing.
	e.p.Configure(both)
	// finn's gateway is now set explicitly: finn reconnects, matty not.
	both[1].GatewayURL = e.srv.GatewayURL()
	e.p.Configure(both)
	eventually(t, func() bool { return e.srv.Identifies(finnToken) == 2 && e.srv.Connected(finnToken) }, "finn reconnected")
	e.srv.Dispatch(finnToken, e.srv.DM(finnToken, alice, "still there?"))
	e.expect(fm.ChannelID, "Finn heard: still there?")

	// Removing matty disconnects him alone.
	e.p.Configure(both[1:])
	eventually(t, func() bool { return !e.srv.Connected(mattyToken) }, "matty disconnected")
	if _, err := e.p.PrivateChat(context.Background(), "matty", "discord-111"); err == nil {
		t.Error("PrivateChat for a removed bot succeeded")
	}
	e.srv.Dispatch(finnToken, e.srv.DM(finnToken, alice, "and now?"))
	e.expect(fm.ChannelID, "Finn heard: and now?")

	if n := e.srv.Identifies(mattyToken); n != 1 {
		t.Errorf("matty identified %d times, want 1: adding finn disturbed him", n)
	}
	if n := e.srv.Resumes(mattyToken) + e.srv.Resumes(finnToken); n != 0 {
		t.Errorf("%d resumes, want none", n)
	}
}

// TestRunStopsEverything: Run returns promptly once its context ends,
// with the bots disconnected and no goroutine of the adapter or of
// discordgo left behind. It is not parallel, so the goroutines it counts
// are its own.
func TestRunStopsEverything(t *testing.T) {
	e := newEnv(t, discord.Options{})
	p := discord.New(discord.Options{Logger: testLogger()})
	p.Configure(e.configs("matty", "finn"))
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx, e.gw) }()
	e.waitConnected(mattyToken)
	e.waitConnected(finnToken)
	if err := p.Run(ctx, e.gw); err == nil {
		t.Error("a second concurrent Run succeeded")
	}
	if len(leftovers()) == 0 {
		t.Fatal("leftovers finds no goroutines while the bots are connected")
	}
	e.srv.DropConnection() // matty and finn are reconnecting as Run ends

	start := time.Now()
	cancel()
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Run took %s to stop", d)
	}
	eventually(t, func() bool { return !e.srv.Connected(mattyToken) && !e.srv.Connected(finnToken) }, "bots disconnected")
	// discordgo's read loop notices its closed socket just after Run.
	eventually(t, func() bool { return len(leftovers()) == 0 }, "no goroutines left:\n%s", strings.Join(leftovers(), "\n\n"))
}

// leftovers lists the stacks of goroutines running discordgo, the
// adapter's connections or HTTP client connections.
func leftovers() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "bwmarrin/discordgo") || strings.Contains(g, "platforms/discord.(*botConn)") ||
			strings.Contains(g, "net/http.(*persistConn)") {
			out = append(out, g)
		}
	}
	return out
}
