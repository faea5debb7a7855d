package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
)

// The database holds secrets (the key that signs anonymous visitors'
// resume tokens) and everyone's messages: its files are its owner's alone
// (SPEC §12). SQLite creates the -wal and -shm files with the mode of
// the database file, whatever the process umask, so the database file is
// created 0600 before SQLite opens it; an existing one with a looser mode
// is tightened, and so are a -wal and -shm a previous run left, before
// SQLite writes to them.

// fileMode is the mode of the database's files.
const fileMode fs.FileMode = 0o600

// Option changes how Open opens a store.
type Option func(*options)

type options struct {
	logger *slog.Logger
}

// WithLogger sets where Open says what it changed (a database file's
// mode). The default is slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// secureFiles creates the database file at path with mode 0600 if it does
// not exist, and takes away every permission but the owner's from it and
// from its -wal and -shm files if they exist, logging each file it
// tightened. An in-memory database has no files, and a path written as a
// URI ("file:…") is left to SQLite.
func secureFiles(path string, log *slog.Logger) error {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") || strings.Contains(path, "://") {
		return nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return err
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&^fileMode == 0 {
			continue
		}
		if err := os.Chmod(p, fileMode); err != nil {
			return fmt.Errorf("make %s readable by its owner only: %w", p, err)
		}
		log.Warn("store: database file was readable by others; its mode is now 0600",
			"file", p, "was", fmt.Sprintf("%#o", fi.Mode().Perm()))
	}
	return nil
}
