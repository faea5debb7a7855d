package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/switchboard-chat/switchboard/api"
	"github.com/switchboard-chat/switchboard/config"
	"github.com/switchboard-chat/switchboard/gateway"
	"github.com/switchboard-chat/switchboard/mcpserver"
	"github.com/switchboard-chat/switchboard/platforms/discord"
	"github.com/switchboard-chat/switchboard/platforms/telegram"
	"github.com/switchboard-chat/switchboard/platforms/web"
	"github.com/switchboard-chat/switchboard/retention"
	"github.com/switchboard-chat/switchboard/world/actions"
	"github.com/switchboard-chat/switchboard/world/findings"
	"github.com/switchboard-chat/switchboard/world/gossip"
	"github.com/switchboard-chat/switchboard/world/insights"
	"github.com/switchboard-chat/switchboard/world/shared"
)

// Shutdown budget (SPEC: everything within 10 s).
const (
	drainTimeout = 4 * time.Second
	// gossipTimeout bounds the checking of messages heard before the
	// drain; deliveries left stay queued for the next start.
	gossipTimeout = time.Second
	flushTimeout  = 2 * time.Second
	closeTimeout  = 2 * time.Second
)

// The HTTP server's timeouts (SPEC §12), so that a client that sends
// slowly, reads slowly or idles cannot hold a connection for ever. They
// do not apply to an upgraded /ws connection: the upgrade takes the
// socket from the server (clearing its deadlines), and the widget keeps
// its own (a ping every 45 s answered within 60 s, 10 s to write a
// frame). No endpoint streams: /metrics answers at once and the dashboard
// polls the API.
const (
	// readHeaderTimeout bounds the reading of a request's headers.
	readHeaderTimeout = 10 * time.Second
	// readTimeout bounds the reading of a whole request, body included
	// (API bodies are at most 1 MiB: 35 KB/s is enough).
	readTimeout = 30 * time.Second
	// writeTimeout bounds a request from the end of its headers to the end
	// of its answer.
	writeTimeout = 60 * time.Second
	// idleTimeout closes a keep-alive connection that sends no new request.
	idleTimeout = 60 * time.Second
)

// Main is one running gateway. Tests start it in-process; the serve
// command runs it until a signal.
type Main struct {
	ConfigDir string
	Logger    *slog.Logger
	Stdout    io.Writer
	// Listen, when set, overrides gateway.listen (tests use
	// 127.0.0.1:0).
	Listen string
	// AdminToken guards the API and dashboard. Empty: the value of
	// SWITCHBOARD_ADMIN_TOKEN, else a random token printed once.
	AdminToken string

	watcher  *config.Watcher
	store    store
	gw       *gateway.Gateway
	web      *web.Adapter
	admin    *api.Server
	obs      *observer
	links    *linkBoard
	discord  *discord.Platform
	telegram *telegram.Platform
	brains   brainSet
	retain   *retention.Job
	mcp      *mcpserver.Server
	// cluster is set on a PostgreSQL database: this process's place
	// among the gateways sharing it (cluster.go).
	cluster *cluster
	board   *findings.Board
	gossip  *gossip.Grapevine
	srv     *http.Server
	ln      net.Listener
	// insights are what bots noticed about people (SPEC §10.4).
	insights *insights.Pool
	// context keeps the spaces' shared context (SPEC §10.7).
	context *shared.Keeper

	// gossipBefore, set by tests, runs before each gossip delivery; an
	// error leaves the delivery queued (gossip.Options.BeforeDeliver).
	gossipBefore func(context.Context, gossip.Delivery) error

	cancel context.CancelFunc
	wg     sync.WaitGroup
	errMu  sync.Mutex
	errs   []error
}

// Run loads the configuration, opens the store, starts the platforms and
// the HTTP server, and returns once the gateway is serving. If a component
// fails to start, the ones already started are stopped.
func (m *Main) Run(ctx context.Context) (err error) {
	if m.Logger == nil {
		m.Logger = slog.Default()
	}
	if m.Stdout == nil {
		m.Stdout = io.Discard
	}
	defer func() {
		if err != nil {
			m.Close()
		}
	}()

	m.watcher, err = config.NewWatcher(ctx, m.ConfigDir, m.Logger, configChecks()...)
	if err != nil {
		return err
	}
	cfg := m.watcher.Current()

	// Listen first: a second gateway on the same configuration stops
	// here, before it touches the first one's database.
	listen := cfg.Gateway.Listen
	if m.Listen != "" {
		listen = m.Listen
	}
	if m.ln, err = listenHTTP(listen); err != nil {
		return err
	}

	var database string
	m.store, database, err = openStore(ctx, cfg, m.Logger)
	if err != nil {
		return err
	}
	tokenKey, err := m.store.Secret(ctx, "web-token", 32)
	if err != nil {
		return err
	}

	m.obs = newObserver()
	m.retain = retention.NewJob(m.store, retentionPolicy(cfg), retention.Options{Logger: m.Logger})
	if m.cluster, err = joinCluster(ctx, m.store, instanceAddress(m.ln.Addr())); err != nil {
		return err
	}
	// The shared world: the board and the insights on the store, and the
	// action registry
	// the gateway binds to every turn; request_help is the gateway's to
	// carry out, so it is registered once the gateway is made (before
	// it starts, so before any turn binds the registry).
	m.board = findings.New(m.store, findings.Options{})
	m.insights = insights.New(m.store, insights.Options{})
	m.gossip = gossip.New(m.store, gossip.Options{Logger: m.Logger, BeforeDeliver: m.gossipBefore})
	m.context = shared.NewKeeper(m.store, contextLimits(cfg))
	registry := actions.New()
	m.gw = gateway.New(gateway.Options{Store: m.store, Sessions: m.store, Outbox: m.store, Logger: m.Logger, Observer: m.obs,
		Shared: m.cluster.shared(), Actions: registry, Findings: m.board, Insights: m.insights, Gossip: m.gossip, Context: m.context})
	if err := registerActions(registry, worldParts{board: m.board, pool: m.insights, keeper: m.context, helper: m.gw, reporter: m.gw}); err != nil {
		return err
	}
	m.board.OnVisible(m.gw.FindingsVisible)
	m.context.OnChange(m.gw.ContextChanged)
	m.obs.gauges(m.gw.QueueDepth, m.store.OutboxPending)
	m.brains.workRoot = filepath.Join(workBase(cfg), "switchboard-work")
	m.mcp = mcpserver.New(mcpserver.Options{URL: mcpURL(m.ln.Addr()), Version: version, Logger: m.Logger})
	m.brains.tools = m.mcp
	if err := makeWorkRoot(m.brains.workRoot); err != nil {
		return err
	}
	// Platforms are configured (by apply) before the gateway starts, so
	// replies left in the outbox find their bots.
	m.links = newLinkBoard()
	m.discord = discord.New(discord.Options{Logger: m.Logger, Report: m.links.report(gateway.PlatformDiscord), Leader: m.cluster.leader()})
	m.telegram = telegram.New(telegram.Options{Logger: m.Logger, Report: m.links.report(gateway.PlatformTelegram), Leader: m.cluster.leader()})
	if err := m.apply(cfg); err != nil {
		return err
	}
	m.web = web.New(web.Options{Settings: webSettings(cfg, m.Logger), TokenKey: tokenKey, Logger: m.Logger})
	m.gw.AddPlatform(m.web)
	m.gw.AddPlatform(m.web.CLI())
	m.gw.AddPlatform(m.discord)
	m.gw.AddPlatform(m.telegram)
	logSkippedPlatforms(cfg, m.Logger)

	generated := m.adminToken()
	m.web.SetAdminToken(m.AdminToken)
	m.admin = &api.Server{Config: m.gw, Sessions: m.store, Delegations: m.gw, Artifacts: m.store, Conversations: m.store, Platforms: m.links,
		Instances: m.instances(), Findings: m.gw, Insights: m.gw, Gossip: m.gw, Chains: m.gw, Context: m.gw, Metrics: m.obs.Gatherer(), Token: m.AdminToken, Logger: m.Logger}
	m.admin.SetSecureCookies(cfg.Gateway.Web.SecureCookies)
	m.srv = &http.Server{
		Handler:           m.routes(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
	}

	runCtx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.goRun("web platform", func() error { return m.web.Run(runCtx, m.gw) })
	<-m.web.Ready()
	m.goRun("discord platform", func() error { return m.discord.Run(runCtx, m.gw) })
	m.goRun("telegram platform", func() error { return m.telegram.Run(runCtx, m.gw) })
	m.goRun("config watcher", func() error { return m.watcher.Run(runCtx) })
	m.goRun("retention", func() error { return runLed(runCtx, m.cluster.leader(), "retention", m.retain.Run) })
	m.watcher.Subscribe(m.reload)
	if m.cluster != nil {
		if err := m.cluster.start(ctx, runCtx, m); err != nil {
			return err
		}
	}
	// The grapevine resumes the deliveries a previous run left before
	// new messages come.
	m.gossip.Start(m.gw.GossipCast())
	if err := m.gw.Start(ctx); err != nil {
		return err
	}
	m.goRun("http server", func() error {
		if err := m.srv.Serve(m.ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	m.Logger.Info("switchboard serving", "addr", "http://"+m.Addr(), "config", cfg.Dir, "database", database, "bots", len(cfg.Bots))
	fmt.Fprintf(m.Stdout, "Switchboard is up: open http://%s\n", m.Addr())
	if generated {
		// Printed once, on standard output only: never logged.
		fmt.Fprintf(m.Stdout, "Dashboard (admin token generated for this run): http://%s/dashboard?token=%s\n", m.Addr(), m.AdminToken)
	} else {
		fmt.Fprintf(m.Stdout, "Dashboard: http://%s/dashboard (sign in with SWITCHBOARD_ADMIN_TOKEN)\n", m.Addr())
	}
	return nil
}

// listenHTTP opens the listener of gateway.listen. Its error names the
// key and the address ("gateway.listen 127.0.0.1:8080: address already
// in use (another switchboard running?)").
func listenHTTP(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &listenError{addr: addr, err: err}
	}
	return ln, nil
}

// listenError is a failure to listen on gateway.listen.
type listenError struct {
	addr string
	err  error
}

// Error names the key and the address, and for an address in use says
// what the cause usually is.
func (e *listenError) Error() string {
	if errors.Is(e.err, syscall.EADDRINUSE) {
		return fmt.Sprintf("gateway.listen %s: address already in use (another switchboard running?)", e.addr)
	}
	// Drop net's "listen tcp ADDR: " prefix, which repeats the address.
	var op *net.OpError
	if errors.As(e.err, &op) && op.Err != nil {
		return fmt.Sprintf("gateway.listen %s: %v", e.addr, op.Err)
	}
	return fmt.Sprintf("gateway.listen %s: %v", e.addr, e.err)
}

// Unwrap returns the listener's error.
func (e *listenError) Unwrap() error { return e.err }

// Addr is the address the HTTP server listens on.
func (m *Main) Addr() string {
	if m.ln == nil {
		return ""
	}
	return m.ln.Addr().String()
}

// goRun runs fn in an owned goroutine, recording its error.
func (m *Main) goRun(name string, fn func() error) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := fn(); err != nil {
			m.Logger.Error(name+" stopped", "err", err)
			m.errMu.Lock()
			m.errs = append(m.errs, fmt.Errorf("%s: %w", name, err))
			m.errMu.Unlock()
		}
	}()
}

// routes is the HTTP surface on gateway.listen.
func (m *Main) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	admin := m.admin.Handler()
	mux.Handle("/api/", admin)
	mux.Handle("/dashboard", admin)
	mux.Handle("GET /metrics", m.obs)
	mux.Handle("/mcp", m.mcp)
	mux.Handle("/telegram/", m.telegram.Handler())
	mux.Handle("/", m.web.Handler())
	return mux
}

// adminToken settles the admin token; generated is true when it was made
// up for this run.
func (m *Main) adminToken() (generated bool) {
	if m.AdminToken == "" {
		m.AdminToken = os.Getenv("SWITCHBOARD_ADMIN_TOKEN")
	}
	if m.AdminToken != "" {
		return false
	}
	var b [24]byte
	rand.Read(b[:])
	m.AdminToken = hex.EncodeToString(b[:])
	return true
}

// Close shuts down in order: stop intake, drain the session queues, stop
// the grapevine (its queue stays stored), flush the outbox, close the platforms (the web adapter closes its WebSocket
// connections itself), stop the HTTP server, close the store. Work that
// does not finish in time stays stored and resumes on the next start.
func (m *Main) Close() error {
	if m.cluster != nil {
		m.cluster.stopTakingOver()
	}
	if m.gw != nil {
		m.gw.StopIntake()
		ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		if err := m.gw.Drain(ctx); err != nil {
			m.Logger.Warn("session queues not drained in time; the rest runs on the next start")
		}
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), gossipTimeout)
		m.gossip.Close(ctx)
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), flushTimeout)
		if err := m.gw.Flush(ctx); err != nil {
			m.Logger.Warn("outbox not flushed in time; the rest is delivered on the next start")
		}
		cancel()
	}
	if m.cancel != nil {
		m.cancel()
	}
	if m.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		m.srv.Shutdown(ctx)
		cancel()
	} else if m.ln != nil {
		m.ln.Close()
	}
	m.wg.Wait()
	var err error
	if m.store != nil {
		err = m.store.Close()
	}
	m.errMu.Lock()
	defer m.errMu.Unlock()
	return errors.Join(append(m.errs, err)...)
}

// webSettings are the web adapter's live settings in cfg.
func webSettings(cfg *config.Config, log *slog.Logger) web.Settings {
	w := cfg.Gateway.Web
	return web.Settings{
		Secret:                     webSecret(cfg, log),
		AllowedOrigins:             w.AllowedOrigins,
		MaxConnectionsPerIP:        w.MaxConnectionsPerIP,
		MessagesPerSecondPerPerson: w.MaxMessagesPerSecondPerPerson,
		MessagesPerSecondPerIP:     w.MaxMessagesPerSecondPerIP,
	}
}

// makeWorkRoot creates the directory of the exec brains' work roots,
// 0711 whatever the umask: programs run as another user (brain.run_as)
// may pass through it to their own directories, and nobody but the
// gateway may list it.
func makeWorkRoot(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return fmt.Errorf("exec work root: %w", err)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("exec work root: %w", err)
	}
	return nil
}

// webSecret reads the web HMAC key from the variable gateway.web.secret_env
// names; unset means anonymous visitors only.
func webSecret(cfg *config.Config, log *slog.Logger) []byte {
	name := cfg.Gateway.Web.SecretEnv
	if name == "" {
		return nil
	}
	v := os.Getenv(name)
	if v == "" {
		log.Info("web: "+name+" is unset; only anonymous web visitors can connect, signed links (user+sig) get 401", "env", name)
		return nil
	}
	return []byte(v)
}
