package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Debounce timing of Watcher: a reload waits until the files have been
// quiet for debounceQuiet, but never longer than debounceMax after the
// first change, so a file rewritten nonstop is still picked up.
const (
	debounceQuiet = 100 * time.Millisecond
	debounceMax   = time.Second
)

// Watcher keeps the last good Config of a directory and replaces it when
// an edit to bots.yaml or users.yaml validates. An edit that does not
// validate is logged and ignored as a whole.
//
// It watches the directory rather than the files, so it sees editors that
// write in place as well as those that write a temporary file and rename
// it over the original, and Kubernetes-style symlink swaps (..data). On
// Linux a file written in place counts as changed when its writer closes
// it, so the database's own writes beside the config files do not wake
// the watcher (see dirwatch_linux.go). Viper's own WatchConfig is not
// used: it watches one file, cannot be stopped, and rereads into state the
// validation cannot trust mid-write.
//
// An edit is loaded on a goroutine of its own, so that Run returns as soon
// as its context ends even while a file is being parsed (parsing cannot
// be interrupted; MaxFileSize bounds it): shutting down never waits for
// a parse.
type Watcher struct {
	dir     string
	logger  *slog.Logger
	current atomic.Pointer[Config]
	running atomic.Bool
	// load is Load; tests make it slow.
	load func(dir string) (*Config, error)

	mu          sync.Mutex
	subscribers []func(old, new *Config)
}

// NewWatcher loads dir once and returns a Watcher holding the result, or
// Load's error, or ctx's if it ends first (see LoadContext). Every load,
// this one and the reloads, uses opts and logs the configuration's
// warnings. Call Run to start watching. A nil logger means
// slog.Default().
func NewWatcher(ctx context.Context, dir string, logger *slog.Logger, opts ...Option) (*Watcher, error) {
	cfg, err := LoadContext(ctx, dir, opts...)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	w := &Watcher{dir: cfg.Dir, logger: logger, load: func(dir string) (*Config, error) { return Load(dir, opts...) }}
	w.current.Store(cfg)
	w.logWarnings(cfg)
	return w, nil
}

// logWarnings logs each warning of cfg on a line of its own.
func (w *Watcher) logWarnings(cfg *Config) {
	for _, e := range cfg.Warnings {
		w.logger.Warn("config: "+e.Message, "file", e.File, "line", e.Line, "key", e.Key)
	}
}

// Current returns the last good Config. It is never nil and safe to call
// from any goroutine; the Config must not be modified.
func (w *Watcher) Current() *Config { return w.current.Load() }

// Subscribe registers fn to be called after each reload that changed the
// configuration, with the previous and the newly published Config. Calls
// are serial, from Run's goroutine, so fn should return quickly.
func (w *Watcher) Subscribe(fn func(old, new *Config)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.subscribers = append(w.subscribers, fn)
}

// Run watches the directory until ctx ends, then returns nil after its
// goroutines have exited, except a load under way, which is abandoned:
// it ends on its own and its result is dropped. It returns an error if
// watching cannot start or Run is already running. Edits made between
// NewWatcher and Run are picked up when Run starts.
func (w *Watcher) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("config watcher: already running")
	}
	defer w.running.Store(false)
	fw, err := newDirWatcher(w.dir)
	if err != nil {
		return fmt.Errorf("config watcher: %w", err)
	}
	defer fw.Close() // waits for the watcher's goroutines to exit

	// One load at a time: a change seen during a load is loaded after it.
	type loaded struct {
		cfg *Config
		err error
	}
	results := make(chan loaded, 1) // never blocks an abandoned load
	loading, again := false, false
	startLoad := func() {
		loading = true
		w.logger.Debug("config change seen; loading it", "dir", w.dir)
		go func() {
			cfg, err := w.load(w.dir)
			results <- loaded{cfg, err}
		}()
	}

	// The timer starts armed, for the edits made before Run.
	timer := time.NewTimer(debounceQuiet)
	defer timer.Stop()
	pendingSince := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case name, ok := <-fw.Names():
			if !ok {
				return nil
			}
			if !relevant(name) {
				continue
			}
			now := time.Now()
			if pendingSince.IsZero() {
				pendingSince = now
			}
			if now.Sub(pendingSince) < debounceMax {
				timer.Reset(debounceQuiet)
			}
		case err, ok := <-fw.Errors():
			if !ok {
				return nil
			}
			// After an overflow events were lost: reload to be safe.
			w.logger.Warn("config watcher error", "dir", w.dir, "err", err)
			if pendingSince.IsZero() {
				pendingSince = time.Now()
				timer.Reset(debounceQuiet)
			}
		case <-timer.C:
			pendingSince = time.Time{}
			if loading {
				again = true
			} else {
				startLoad()
			}
		case r := <-results:
			loading = false
			w.publish(r.cfg, r.err)
			if again {
				again = false
				startLoad()
			}
		}
	}
}

// relevant reports whether a change to the named file may change the
// configuration.
func relevant(name string) bool {
	switch filepath.Base(name) {
	case BotsFile, UsersFile, "..data":
		return true
	}
	return false
}

// publish replaces the current Config with cfg, the result of loading
// the files afresh, if it is valid (err is nil) and differs from it.
func (w *Watcher) publish(cfg *Config, err error) {
	if err != nil {
		w.logger.Warn("config edit rejected; keeping the last good configuration",
			"dir", w.dir, "errors", summary(err))
		return
	}
	old := w.Current()
	if reflect.DeepEqual(old, cfg) {
		return
	}
	w.current.Store(cfg)
	w.logger.Info("config reloaded", "dir", w.dir, "bots", len(cfg.Bots), "users", len(cfg.Users.Users))
	w.logWarnings(cfg)
	if old.Gateway.Listen != cfg.Gateway.Listen {
		w.logger.Warn("gateway.listen changed; it takes effect after a restart",
			"running", old.Gateway.Listen, "configured", cfg.Gateway.Listen)
	}
	if old.DatabaseSource() != cfg.DatabaseSource() {
		w.logger.Warn("gateway.database changed; it takes effect after a restart",
			"running", old.DatabaseSource(), "configured", cfg.DatabaseSource())
	}
	w.mu.Lock()
	subs := append([]func(old, new *Config){}, w.subscribers...)
	w.mu.Unlock()
	for _, fn := range subs {
		fn(old, cfg)
	}
}

// maxLoggedErrors bounds the problems a rejected edit logs: a broken
// file can have thousands.
const maxLoggedErrors = 20

// summary is a Load error on one line, its problems joined with "; ",
// the first maxLoggedErrors of them.
func summary(err error) string {
	var errs Errors
	if errors.As(err, &errs) && len(errs) > maxLoggedErrors {
		more := len(errs) - maxLoggedErrors
		errs = append(Errors(nil), errs...)
		errs.sort()
		return fmt.Sprintf("%s; and %d more", strings.ReplaceAll(errs[:maxLoggedErrors].Error(), "\n", "; "), more)
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
