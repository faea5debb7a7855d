package gateway

import (
	"context"

	"github.com/switchboard-chat/switchboard/delegation"
)

// OnDelegation registers fn to be called (from the gateway's goroutines,
// so it must not block) after every stored change of a delegation.
func (g *Gateway) OnDelegation(fn func(delegation.Record)) {
	g.platformsMu.Lock()
	defer g.platformsMu.Unlock()
	g.delegationHooks = append(g.delegationHooks, fn)
}

// notify pushes a delegation's current status to watchers.
func (g *Gateway) notify(d delegation.Record) {
	g.obs.Delegation(d.Status)
	u, _ := g.users.Load().User(d.UserID)
	g.platformsMu.RLock()
	for _, p := range g.platforms {
		if w, ok := p.(DelegationWatcher); ok {
			w.DelegationChanged(*d.Ref(), u.Identities)
		}
	}
	for _, fn := range g.delegationHooks {
		fn(d)
	}
	g.platformsMu.RUnlock()
	// A hand-off that ended is a step of its space's artifact chain.
	if d.Kind == delegation.KindHandoff && d.Space != "" && (d.Status == delegation.StatusDone || d.Status == delegation.StatusFailed) {
		g.ContextChanged(d.Space)
	}
}

// notifyUpdate reloads a delegation after a change and pushes it.
func (g *Gateway) notifyUpdate(ctx context.Context, id string) {
	d, err := g.store.Delegation(ctx, id)
	if err != nil {
		g.log.Error("reload delegation", "delegation", id, "err", err)
		return
	}
	g.notify(d)
}
