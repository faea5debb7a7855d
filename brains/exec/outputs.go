package exec

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-chat/switchboard/brains"
)

// MaxArtifact is the largest output file collected as an artifact.
const MaxArtifact = 32 << 20

// A session's working directory outlives its tasks, so a file named like
// an expected output may be left from an earlier task. Only files
// created or modified since the task began are collected: the state of
// each expected name is noted at the task's first turn, and a corrective
// retry of the same task (same delegation ID) is compared with that
// note, so an output written by the first attempt still counts. After a
// restart the note is gone and every existing file counts.

// delegationRun is what a working directory holds for one task.
type delegationRun struct {
	dir string
	// id is the delegation's ID; empty IDs never match, so such a task
	// is always at its first turn.
	id string
	// before is the state of each expected name when the task began;
	// names absent then are missing from it.
	before map[string]fileState
}

// fileState is what tells a rewritten file from an untouched one.
type fileState struct {
	size int64
	mod  time.Time
}

// prepare readies dir for a delegated turn: at the task's first turn it
// writes the input artifacts there and notes the expected names' state.
// It returns nil for an ordinary turn.
func (b *Brain) prepare(dir string, d *brains.Delegation) (*delegationRun, error) {
	if d == nil {
		return nil, nil
	}
	for _, a := range d.Inputs {
		if err := checkName(a.Name); err != nil {
			return nil, fmt.Errorf("exec brain: input: %w", err)
		}
	}
	for _, e := range d.Expected {
		if err := checkName(e.Name); err != nil {
			return nil, fmt.Errorf("exec brain: expected output: %w", err)
		}
	}
	// Turns of one session never overlap, so only the map needs the lock.
	b.mu.Lock()
	r := b.runs[dir]
	b.mu.Unlock()
	if r != nil && r.id != "" && r.id == d.ID {
		return r, nil // a corrective retry: inputs may have been edited on purpose
	}
	for _, a := range d.Inputs {
		if err := writeFile(dir, a.Name, a.Content, b.account); err != nil {
			return nil, fmt.Errorf("exec brain: write input %s: %w", a.Name, err)
		}
	}
	r = &delegationRun{dir: dir, id: d.ID, before: make(map[string]fileState)}
	for _, e := range d.Expected {
		if fi, err := os.Lstat(filepath.Join(dir, e.Name)); err == nil {
			r.before[e.Name] = fileState{size: fi.Size(), mod: fi.ModTime()}
		}
	}
	// Every other file at the top of the directory too: one the task
	// writes there besides its expected outputs is recorded as well.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("exec brain: working directory: %w", err)
	}
	for _, ent := range entries {
		if fi, err := ent.Info(); err == nil && fi.Mode().IsRegular() {
			r.before[ent.Name()] = fileState{size: fi.Size(), mod: fi.ModTime()}
		}
	}
	b.mu.Lock()
	b.runs[dir] = r
	b.mu.Unlock()
	return r, nil
}

// maxExtra bounds the files a delegated turn is credited with besides its
// expected outputs.
const maxExtra = 16

// collect returns the expected outputs written since the task began, in
// the order expected, then the other files written at the top of the
// directory since then (SPEC §10.7: what a delegated turn produces is
// recorded, expected or not), by name, at most maxExtra: regular files
// only, not hidden ones, not the gateway's own (switchboard-mcp.json),
// none over MaxArtifact (skipped with a warning). Missing ones are left out for the gateway's check
// to report; a symlink, directory or other non-regular file under an
// expected name is skipped with a warning. Files are opened through an
// os.Root of the directory and checked again once open, so a program
// that swaps a file for a symlink cannot make the gateway (root, with
// run_as) read a file outside its directory, nor block it on a FIFO.
func (r *delegationRun) collect(log *slog.Logger, expected []brains.Expected) ([]brains.Artifact, error) {
	root, err := os.OpenRoot(r.dir)
	if err != nil {
		return nil, fmt.Errorf("exec brain: outputs: %w", err)
	}
	defer root.Close()
	var arts []brains.Artifact
	for _, e := range expected {
		fi, err := root.Lstat(e.Name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("exec brain: output %s: %w", e.Name, err)
		case !fi.Mode().IsRegular():
			log.Warn("expected output is not a regular file; not collected", "name", e.Name, "mode", fi.Mode().String())
			continue
		}
		if was, ok := r.before[e.Name]; ok && was.size == fi.Size() && was.mod.Equal(fi.ModTime()) {
			log.Info("expected output unchanged since the task began; not collected", "name", e.Name)
			continue
		}
		content, err := readRegular(root, e.Name)
		if errors.Is(err, errNotRegular) {
			log.Warn("expected output is not a regular file; not collected", "name", e.Name)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("exec brain: output %s: %w", e.Name, err)
		}
		arts = append(arts, brains.Artifact{Name: e.Name, MediaType: mediaType(e, content), Content: content})
	}
	return append(arts, r.extras(log, root, expected)...), nil
}

// extras returns the files written since the task began that collect
// credits besides the expected outputs.
func (r *delegationRun) extras(log *slog.Logger, root *os.Root, expected []brains.Expected) []brains.Artifact {
	d, err := root.Open(".")
	if err != nil {
		log.Warn("the working directory could not be listed; only expected outputs collected", "err", err)
		return nil
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		log.Warn("the working directory could not be listed; only expected outputs collected", "err", err)
		return nil
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var arts []brains.Artifact
	for _, ent := range entries {
		name := ent.Name()
		if strings.HasPrefix(name, ".") || name == MCPConfigFile || !ent.Type().IsRegular() ||
			slices.ContainsFunc(expected, func(e brains.Expected) bool { return e.Name == name }) {
			continue
		}
		fi, err := ent.Info()
		if err != nil {
			continue
		}
		if was, ok := r.before[name]; ok && was.size == fi.Size() && was.mod.Equal(fi.ModTime()) {
			continue
		}
		if len(arts) == maxExtra {
			log.Warn("more files written than are collected besides the expected outputs", "collected", maxExtra)
			break
		}
		content, err := readRegular(root, name)
		if err != nil {
			log.Warn("a file the task wrote is not collected", "name", name, "err", err)
			continue
		}
		arts = append(arts, brains.Artifact{Name: name, MediaType: mediaType(brains.Expected{Name: name}, content), Content: content})
	}
	return arts
}

// errNotRegular is readRegular's error for anything but a regular file.
var errNotRegular = errors.New("not a regular file")

// readRegular reads name in root if it is a regular file of at most
// MaxArtifact bytes. The open does not block (O_NONBLOCK: a FIFO would
// wait for a writer) and its result is checked with fstat.
func readRegular(root *os.Root, name string) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, errNotRegular
	case fi.Size() > MaxArtifact:
		return nil, fmt.Errorf("%d bytes, over the %d limit", fi.Size(), MaxArtifact)
	}
	content, err := io.ReadAll(io.LimitReader(f, MaxArtifact+1))
	if err == nil && len(content) > MaxArtifact {
		err = fmt.Errorf("over the %d-byte limit", MaxArtifact)
	}
	return content, err
}

// extTypes are media types for extensions mime's built-in table lacks
// (it varies with the system's mime.types otherwise).
var extTypes = map[string]string{
	".md":       "text/markdown; charset=utf-8",
	".markdown": "text/markdown; charset=utf-8",
	".txt":      "text/plain; charset=utf-8",
	".csv":      "text/csv; charset=utf-8",
	".yaml":     "application/yaml",
	".yml":      "application/yaml",
	".json":     "application/json",
	".html":     "text/html; charset=utf-8",
	".pdf":      "application/pdf",
	".png":      "image/png",
}

// mediaType is the expected output's declared type, else one guessed from
// the name's extension, else from the content.
func mediaType(e brains.Expected, content []byte) string {
	if e.MediaType != "" {
		return e.MediaType
	}
	ext := strings.ToLower(filepath.Ext(e.Name))
	if t, ok := extTypes[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return http.DetectContentType(content)
}
