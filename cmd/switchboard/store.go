package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/switchboard-chat/switchboard/api"
	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/outbox"
	"github.com/switchboard-chat/switchboard/retention"
	"github.com/switchboard-chat/switchboard/store/postgres"
	"github.com/switchboard-chat/switchboard/store/sqlite"
	"github.com/switchboard-chat/switchboard/world/findings"
	"github.com/switchboard-chat/switchboard/world/gossip"
	"github.com/switchboard-chat/switchboard/world/insights"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// store is everything serve uses of its store, SQLite's or PostgreSQL's:
// the core's contracts, what the admin API reads, and the secrets.
type store interface {
	gateway.Store
	gateway.SessionStore
	outbox.Store
	retention.Store
	findings.Store
	insights.Store
	shared.Store
	gossip.Store
	api.Sessions
	api.Artifacts
	api.Conversations
	// OutboxPending counts the replies not yet delivered or given up.
	OutboxPending(ctx context.Context) (int, error)
	// Secret returns the named random secret, made on first use.
	Secret(ctx context.Context, name string, n int) ([]byte, error)
	Close() error
}

var (
	_ store = (*sqlite.Store)(nil)
	_ store = (*postgres.Store)(nil)
)

// openStore opens the store cfg names (SPEC §11): the PostgreSQL database
// whose URL is in the variable gateway.database_env names, else the
// SQLite file gateway.database. where names it for the log, never with a
// password. Errors about PostgreSQL name gateway.database_env and its
// variable.
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (s store, where string, err error) {
	if cfg.Gateway.DatabaseEnv == "" {
		s, err := sqlite.Open(ctx, cfg.DatabasePath(), sqlite.WithLogger(log))
		if err != nil {
			return nil, "", err
		}
		return s, cfg.DatabasePath(), nil
	}
	u, err := cfg.PostgresURL(os.LookupEnv)
	if err != nil {
		return nil, "", err
	}
	pg, err := postgres.Open(ctx, u, postgres.WithLogger(log))
	if err != nil {
		return nil, "", fmt.Errorf("gateway.database_env: $%s: %w", cfg.Gateway.DatabaseEnv, err)
	}
	return pg, "postgres " + pg.String(), nil
}

// workBase is the directory under which the exec brains' work roots go:
// beside the SQLite file, or in the configuration's directory when the
// data is on a PostgreSQL server.
func workBase(cfg *config.Config) string {
	if cfg.Gateway.DatabaseEnv != "" {
		return cfg.Dir
	}
	return filepath.Dir(cfg.DatabasePath())
}
