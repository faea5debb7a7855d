package main

import (
	"context"
	"net"
	"os"
	"sync"
	"time"

	"github.com/switchboard-chat/switchboard/api"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/store/postgres"
)

// takeOverEvery is how often a process on a shared database looks for
// work that processes which died left (their sessions' turns, their
// undelivered replies).
const takeOverEvery = 2 * time.Second

// cluster is this process's place among the gateways sharing a
// PostgreSQL database (SPEC §11): its membership (which holds its leads
// of bots' platform connections), the listener of the others' notices,
// and the loop that takes over what dead ones left.
type cluster struct {
	pg     *postgres.Store
	member *postgres.Member

	mu       sync.Mutex
	stopTake context.CancelFunc
	taking   sync.WaitGroup
}

// joinCluster joins the instances of s's database when it is a
// PostgreSQL one; on SQLite (one process only) it returns nil.
func joinCluster(ctx context.Context, s store, address string) (*cluster, error) {
	pg, ok := s.(*postgres.Store)
	if !ok {
		return nil, nil
	}
	member, err := pg.Join(ctx, address)
	if err != nil {
		return nil, err
	}
	return &cluster{pg: pg, member: member}, nil
}

// shared is what the gateway reads of the others' work; nil on SQLite.
func (c *cluster) shared() gateway.SharedStore {
	if c == nil {
		return nil
	}
	return c.pg
}

// leader decides which process leads each bot; nil on SQLite, where
// this one leads every bot.
func (c *cluster) leader() gateway.Leader {
	if c == nil {
		return nil
	}
	return c.member
}

// start runs the membership and the listener until runCtx ends (the
// membership then leaves the database's instances), and the take-over
// loop until stopTakingOver. It returns once the listener listens.
func (c *cluster) start(ctx, runCtx context.Context, m *Main) error {
	m.goRun("cluster membership", func() error { return c.member.Run(runCtx) })
	ready := make(chan struct{})
	m.goRun("cluster listener", func() error { return c.pg.Listen(runCtx, m.gw.Noticed, m.gw.Resync, ready) })
	select {
	case <-ready:
	case <-ctx.Done():
		return ctx.Err()
	}
	takeCtx, stop := context.WithCancel(runCtx)
	c.mu.Lock()
	c.stopTake = stop
	c.mu.Unlock()
	c.taking.Add(1)
	go func() {
		defer c.taking.Done()
		t := time.NewTicker(takeOverEvery)
		defer t.Stop()
		for {
			select {
			case <-takeCtx.Done():
				return
			case <-t.C:
			}
			if err := m.gw.TakeOver(takeCtx); err != nil && takeCtx.Err() == nil {
				m.Logger.Warn("cluster: taking over the work of instances that died failed; trying again", "err", err)
			}
		}
	}()
	return nil
}

// runLed runs job while this process leads the task named task (one
// process at a time among those sharing a database), until ctx ends;
// with no leader (SQLite) it just runs job.
func runLed(ctx context.Context, leader gateway.Leader, task string, job func(context.Context) error) error {
	if leader == nil {
		return job(ctx)
	}
	for ctx.Err() == nil {
		held, release := context.WithCancel(ctx)
		lead, err := leader.Lead(held, task, "")
		if err != nil {
			release()
			return nil
		}
		err = job(lead)
		release() // gives the lead up if it is still held
		if err != nil {
			return err
		}
	}
	return nil
}

// stopTakingOver ends the take-over loop and waits for it: a process
// shutting down takes on no more work.
func (c *cluster) stopTakingOver() {
	c.mu.Lock()
	stop := c.stopTake
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	c.taking.Wait()
}

// instanceAddress is how this process is reached, for the instances
// list: the listener's address, with the host name for a wildcard host.
func instanceAddress(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		}
	}
	return net.JoinHostPort(host, port)
}

// instances lists the live gateway processes for the API: the database's
// on PostgreSQL; on SQLite this one, leading every bot's connection.
func (m *Main) instances() api.Instances {
	if m.cluster != nil {
		return m.cluster.pg
	}
	return &soloInstance{id: "local", address: instanceAddress(m.ln.Addr()), started: time.Now(), links: m.links}
}

// soloInstance is the only gateway process of a SQLite database.
type soloInstance struct {
	id, address string
	started     time.Time
	links       api.Platforms
}

// Instances implements api.Instances.
func (s *soloInstance) Instances(context.Context) ([]gateway.Instance, error) {
	in := gateway.Instance{ID: s.id, Address: s.address, StartedAt: s.started, HeartbeatAt: time.Now(), Leads: []gateway.Lead{}}
	for _, l := range s.links.PlatformLinks() {
		if (l.Platform == gateway.PlatformTelegram || l.Platform == gateway.PlatformDiscord) && l.State != gateway.LinkSkipped {
			in.Leads = append(in.Leads, gateway.Lead{Bot: l.Bot, Platform: l.Platform})
		}
	}
	return []gateway.Instance{in}, nil
}
