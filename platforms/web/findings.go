package web

import (
	"context"
	"time"

	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/world"
	"github.com/switchboard-chat/switchboard/world/findings"
)

// The findings board in the widget (SPEC §10.2): findings {bot|chat,
// limit} asks for the board of a space, answered by findings {space,
// items}; a finding frame goes to every connection of the space's people
// when a finding becomes visible there (posted outside an isolated
// stage, or released).

var _ gateway.FindingWatcher = (*Adapter)(nil)

// findingJSON is a finding as frames show it: its author by bot ID.
type findingJSON struct {
	ID       int64  `json:"id"`
	Space    string `json:"space"`
	Bot      string `json:"bot"`
	Text     string `json:"text"`
	Severity string `json:"severity"`
	Stage    string `json:"stage"`
	Time     string `json:"time"`
}

func findingOf(f findings.Finding) findingJSON {
	return findingJSON{
		ID: f.ID, Space: f.Space, Bot: f.Bot, Text: f.Text, Severity: f.Severity, Stage: f.Stage,
		Time: f.CreatedAt.UTC().Format(time.RFC3339Nano),
	}
}

// findingFrame is the finding frame.
type findingFrame struct {
	Type string `json:"type"`
	findingJSON
}

// findingsFrame answers a findings frame.
type findingsFrame struct {
	Type  string        `json:"type"`
	Space string        `json:"space"`
	Items []findingJSON `json:"items"`
}

// handleFindings answers a findings frame with the space's visible
// findings, oldest first.
func (c *conn) handleFindings(ctx context.Context, f inFrame) error {
	limit := f.Limit
	if limit == 0 {
		limit = defaultHistory
	}
	if f.Bot != "" && !c.onWeb(f.Bot) {
		return c.unknownBot(f.Bot, f.ClientID)
	}
	space, items, err := c.host.Findings(ctx, gateway.FindingsRequest{
		Platform: c.v.platform, PlatformID: c.v.platformID, Bot: f.Bot, Chat: f.Chat, Limit: min(limit, maxHistory),
	})
	if err != nil {
		return c.refusal("findings", err, f.ClientID)
	}
	out := findingsFrame{Type: "findings", Space: space, Items: []findingJSON{}}
	for _, it := range items {
		out.Items = append(out.Items, findingOf(it))
	}
	c.send(out)
	return nil
}

// FindingsVisible implements gateway.FindingWatcher: the connections of
// a private space's person (on the web and in the terminal), or those in
// a room whose space it is, get a finding frame for each.
func (a *Adapter) FindingsVisible(space world.Space, visible []findings.Finding, platformIDs []string) {
	var conns []*conn
	a.mu.RLock()
	switch space.Kind {
	case world.KindUser:
		for _, pid := range platformIDs {
			for c := range a.byUser[pid] {
				conns = append(conns, c)
			}
		}
	case world.KindChat:
		for c := range a.rooms[roomKey{space.Platform, space.Chat}] {
			conns = append(conns, c)
		}
	}
	a.mu.RUnlock()
	if len(conns) == 0 {
		return
	}
	for _, f := range visible {
		frame := findingFrame{Type: "finding", findingJSON: findingOf(f)}
		for _, c := range conns {
			c.send(frame)
		}
	}
}
