package gateway_test

import (
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/identity"
)

// rosterWatcher is a web platform that records the rosters it is told.
type rosterWatcher struct {
	*recorder
	mu   sync.Mutex
	told [][]gateway.BotInfo
}

func (w *rosterWatcher) RosterChanged(bots []gateway.BotInfo) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.told = append(w.told, bots)
}

func (w *rosterWatcher) rosters() [][]gateway.BotInfo {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.told)
}

// A new roster reaches each watching platform as that platform's bots,
// and Bots already answers with them when it does.
func TestSetRosterTellsWatchers(t *testing.T) {
	w := &rosterWatcher{recorder: newRecorder("web")}
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "sb.db"), plat: w.recorder, platform: w}
	h.open(bot("matty", echo), bot("finn", echo))
	if got := w.rosters(); len(got) != 0 {
		t.Fatalf("told %v before any platform was added", got)
	}

	tgOnly := bot("tg", echo)
	tgOnly.Platforms = []string{"telegram"}
	renamed := bot("finn", echo)
	renamed.Name = "Finn Shipley"
	h.gw.SetRoster(gateway.NewRoster([]*gateway.Bot{renamed, tgOnly}))
	want := []gateway.BotInfo{{ID: "finn", Name: "Finn Shipley"}}
	got := w.rosters()
	if len(got) != 1 || !slices.Equal(got[0], want) {
		t.Fatalf("told %v, want once %v", got, want)
	}
	if bots := h.gw.Bots("web"); !slices.Equal(bots, want) {
		t.Errorf("Bots(web) = %v, want %v", bots, want)
	}
}

// Resolve names an unlisted anonymous visitor by their guest name, a
// listed person by users.yaml, and anyone else not at all.
func TestResolveNamesGuests(t *testing.T) {
	h := newHarness(t, bot("matty", echo))
	h.gw.SetDirectory(directory(t, identity.User{ID: "user-ann", Name: "Ann", Identities: []string{"web-ann"}}))
	guest, _ := identity.GuestName("web-anon-77")
	for id, want := range map[string]string{
		"web-anon-77":  guest,
		"web-ann":      "Ann",
		"telegram-999": "",
		"web-carol":    "",
	} {
		if got := h.gw.Resolve(id).Name; got != want {
			t.Errorf("Resolve(%q).Name = %q, want %q", id, got, want)
		}
	}
}
