package gateway

import "context"

// DelegationWatcher is implemented by platforms that show hand-off status
// live (the web widget's delegation frames). platformIDs are the user's
// identities; the watcher shows the change to whichever it serves.
type DelegationWatcher interface {
	DelegationChanged(ref DelegationRef, platformIDs []string)
}

// OnDelegation registers fn to be called (from the gateway's goroutines,
// so it must not block) after every stored change of a delegation.
func (g *Gateway) OnDelegation(fn func(Delegation)) {
	g.platformsMu.Lock()
	defer g.platformsMu.Unlock()
	g.delegationHooks = append(g.delegationHooks, fn)
}

// notify pushes a delegation's current status to watchers.
func (g *Gateway) notify(d Delegation) {
	g.obs.Delegation(d.Status)
	u, _ := g.users.Load().User(d.UserID)
	pids := u.Identities
	g.platformsMu.RLock()
	defer g.platformsMu.RUnlock()
	for _, p := range g.platforms {
		if w, ok := p.(DelegationWatcher); ok {
			w.DelegationChanged(*d.Ref(), pids)
		}
	}
	for _, fn := range g.delegationHooks {
		fn(d)
	}
}

// notifyUpdate reloads a delegation after a change and pushes it.
func (g *Gateway) notifyUpdate(ctx context.Context, id string) {
	d, err := g.store.GetDelegation(ctx, id)
	if err != nil {
		g.log.Error("reload delegation", "delegation", id, "err", err)
		return
	}
	g.notify(d)
}
