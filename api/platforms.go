package api

import (
	"net/http"
	"time"
)

// Platforms reports how each bot's platform connections stand.
type Platforms interface {
	// PlatformLinks lists one entry per bot and platform in its
	// configuration, in configuration order (bots, then web, telegram,
	// discord).
	PlatformLinks() []PlatformLink
}

// PlatformLink is one bot's connection to one platform.
type PlatformLink struct {
	Bot      string
	Platform string
	// State is one of gateway.LinkConnecting, LinkConnected, LinkFailing
	// or LinkSkipped.
	State string
	// Reason says why a link is skipped or failing (the last error); it
	// is empty otherwise.
	Reason string
	// Since is when State last changed.
	Since time.Time
}

// platformJSON is a PlatformLink as GET /api/v1/platforms shows it.
type platformJSON struct {
	Bot      string `json:"bot"`
	Platform string `json:"platform"`
	State    string `json:"state"`
	Reason   string `json:"reason"`
	Since    string `json:"since"`
}

// platforms lists every bot's platforms with their state.
func (s *Server) platforms(w http.ResponseWriter, r *http.Request) {
	items := []platformJSON{}
	if s.Platforms != nil {
		for _, l := range s.Platforms.PlatformLinks() {
			items = append(items, platformJSON{Bot: l.Bot, Platform: l.Platform, State: l.State, Reason: l.Reason, Since: rfc3339(l.Since)})
		}
	}
	writeList(w, items)
}
