//go:build !linux

package config

import (
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// fsnotifyWatcher is the dirWatcher of systems other than Linux.
type fsnotifyWatcher struct {
	fw    *fsnotify.Watcher
	names chan string
	done  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
}

func newDirWatcher(dir string) (dirWatcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := fw.Add(dir); err != nil {
		fw.Close()
		return nil, err
	}
	w := &fsnotifyWatcher{fw: fw, names: make(chan string), done: make(chan struct{})}
	w.wg.Go(func() {
		defer close(w.names)
		for {
			select {
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				select {
				case w.names <- filepath.Base(ev.Name):
				case <-w.done:
					return
				}
			case <-w.done:
				return
			}
		}
	})
	return w, nil
}

func (w *fsnotifyWatcher) Names() <-chan string { return w.names }
func (w *fsnotifyWatcher) Errors() <-chan error { return w.fw.Errors }

func (w *fsnotifyWatcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.done)
		err = w.fw.Close()
		w.wg.Wait()
	})
	return err
}
