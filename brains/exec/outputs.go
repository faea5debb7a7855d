package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
		if err := writeFile(dir, a.Name, a.Content); err != nil {
			return nil, fmt.Errorf("exec brain: write input %s: %w", a.Name, err)
		}
	}
	r = &delegationRun{dir: dir, id: d.ID, before: make(map[string]fileState)}
	for _, e := range d.Expected {
		if fi, err := os.Lstat(filepath.Join(dir, e.Name)); err == nil {
			r.before[e.Name] = fileState{size: fi.Size(), mod: fi.ModTime()}
		}
	}
	b.mu.Lock()
	b.runs[dir] = r
	b.mu.Unlock()
	return r, nil
}

// collect returns the expected outputs written since the task began, in
// the order expected. Missing ones are left out for the gateway's check
// to report; a symlink or directory under an expected name is skipped
// with a warning, so a program cannot make the gateway read files outside
// its directory.
func (r *delegationRun) collect(log *slog.Logger, expected []brains.Expected) ([]brains.Artifact, error) {
	var arts []brains.Artifact
	for _, e := range expected {
		path := filepath.Join(r.dir, e.Name)
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("exec brain: output %s: %w", e.Name, err)
		case !fi.Mode().IsRegular():
			log.Warn("expected output is not a regular file; not collected", "name", e.Name, "mode", fi.Mode().String())
			continue
		case fi.Size() > MaxArtifact:
			return nil, fmt.Errorf("exec brain: output %s is %d bytes, over the %d limit", e.Name, fi.Size(), MaxArtifact)
		}
		if was, ok := r.before[e.Name]; ok && was.size == fi.Size() && was.mod.Equal(fi.ModTime()) {
			log.Info("expected output unchanged since the task began; not collected", "name", e.Name)
			continue
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("exec brain: output %s: %w", e.Name, err)
		}
		arts = append(arts, brains.Artifact{Name: e.Name, MediaType: mediaType(e, content), Content: content})
	}
	return arts, nil
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
