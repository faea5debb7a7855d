package main

import (
	"slices"
	"testing"
	"time"

	"github.com/switchboard-chat/switchboard/cliclient"
)

// The terminal's line of a hand-off shows its progress while it runs
// and its status otherwise: a frame that keeps the last report after
// the hand-off ended says done.
func TestChatLineShowsProgress(t *testing.T) {
	conn := &cliclient.Conn{Hello: cliclient.Frame{Bots: []cliclient.Bot{{ID: "researcher", Name: "Researcher"}}}}
	for _, c := range []struct {
		status   string
		progress *cliclient.Progress
		want     string
	}{
		{"running", &cliclient.Progress{Text: "Surveying CompetitorX", Step: 1, Total: 3}, "[hand-off → Researcher: Step 1/3: Surveying CompetitorX]"},
		{"running", &cliclient.Progress{Text: "Surveying", Step: 2}, "[hand-off → Researcher: Step 2: Surveying]"},
		{"running", &cliclient.Progress{Text: "Reading the files"}, "[hand-off → Researcher: Reading the files]"},
		{"running", &cliclient.Progress{}, "[hand-off → Researcher: running]"},
		{"running", nil, "[hand-off → Researcher: running]"},
		{"done", &cliclient.Progress{Text: "Surveying CompetitorX", Step: 3, Total: 3}, "[hand-off → Researcher: done]"},
		{"failed", &cliclient.Progress{Text: "Surveying CompetitorX", Step: 1, Total: 3}, "[hand-off → Researcher: failed]"},
	} {
		f := cliclient.Frame{Type: "delegation", Delegation: &cliclient.Delegation{To: "researcher", Status: c.status, Progress: c.progress}}
		if got := chatLine(conn, f, "cli-ann"); got != c.want {
			t.Errorf("%s %+v: %q, want %q", c.status, c.progress, got, c.want)
		}
	}
}

// Through a running gateway: the terminal prints each progress report
// of a hand-off (progressBots' Stepper reports three steps), in order,
// then done.
func TestChatProgressLines(t *testing.T) {
	m := startMain(t, writeConfigDir(t, progressBots))
	conn, err := cliclient.Dial(t.Context(), cliclient.Options{Server: "http://" + m.Addr(), Token: m.AdminToken, As: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.Send(map[string]any{"type": "send", "bot": "boss", "text": "go", "client_id": "g"}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	timeout := time.After(20 * time.Second)
	for !slices.Contains(lines, "[hand-off → Stepper: done]") {
		select {
		case f, ok := <-conn.Frames():
			if !ok {
				t.Fatalf("the connection ended: %v; lines %q", conn.Err(), lines)
			}
			if f.Type == "delegation" {
				lines = append(lines, chatLine(conn, f, conn.Hello.PlatformID))
			}
		case <-timeout:
			t.Fatalf("no done after 20 s; lines %q", lines)
		}
	}
	var progress []string
	for _, l := range lines {
		if l != "[hand-off → Stepper: queued]" && l != "[hand-off → Stepper: running]" && l != "[hand-off → Stepper: done]" {
			progress = append(progress, l)
		}
	}
	want := []string{"[hand-off → Stepper: Step 1/3: Reading]", "[hand-off → Stepper: Step 2/3: Writing]", "[hand-off → Stepper: Step 3/3: Checking]"}
	if !slices.Equal(progress, want) {
		t.Errorf("lines %q; progress lines %q, want %q", lines, progress, want)
	}
}
