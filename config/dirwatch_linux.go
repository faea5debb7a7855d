//go:build linux

package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux the directory is watched with inotify directly, for a narrower
// set of events than fsnotify asks for: a file's content counts as changed
// when a writer closes it (IN_CLOSE_WRITE), not at every write
// (IN_MODIFY). The database usually lives in the config directory, and
// SQLite writes its files all the time without closing them: with
// IN_MODIFY every commit woke the watcher, a few percent of the gateway's
// CPU under load. Editors that write in place close the file when done,
// and those that rename a new file over the old one (or swap a symlink)
// are seen by the renames and creations.
const inotifyMask = unix.IN_CLOSE_WRITE | unix.IN_CREATE | unix.IN_DELETE |
	unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

type inotifyWatcher struct {
	f      *os.File
	names  chan string
	errs   chan error
	done   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once
}

func newDirWatcher(dir string) (dirWatcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, inotifyMask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	// A non-blocking descriptor in an os.File reads through the runtime
	// poller, so Close interrupts a pending read.
	w := &inotifyWatcher{
		f:     os.NewFile(uintptr(fd), "inotify"),
		names: make(chan string),
		errs:  make(chan error),
		done:  make(chan struct{}),
	}
	w.wg.Go(w.read)
	return w, nil
}

func (w *inotifyWatcher) Names() <-chan string { return w.names }
func (w *inotifyWatcher) Errors() <-chan error { return w.errs }

func (w *inotifyWatcher) Close() error {
	var err error
	w.closed.Do(func() {
		close(w.done)
		err = w.f.Close()
		w.wg.Wait()
	})
	return err
}

// read decodes events until the watcher is closed.
func (w *inotifyWatcher) read() {
	defer close(w.names)
	defer close(w.errs)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			if !sendOrDone(w, w.errs, fmt.Errorf("inotify read: %w", err)) {
				return
			}
			continue
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameAt := off + unix.SizeofInotifyEvent
			off = nameAt + int(ev.Len)
			if off > n {
				break // cannot happen: the kernel returns whole events
			}
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				if !sendOrDone(w, w.errs, errors.New("inotify: event queue overflowed")) {
					return
				}
			case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
				if !sendOrDone(w, w.errs, errors.New("inotify: the watched directory went away")) {
					return
				}
			case ev.Len > 0:
				name := unix.ByteSliceToString(buf[nameAt:off])
				if !sendOrDone(w, w.names, filepath.Base(name)) {
					return
				}
			}
		}
	}
}

// sendOrDone sends v on ch unless the watcher is closed first.
func sendOrDone[T any](w *inotifyWatcher, ch chan T, v T) bool {
	select {
	case ch <- v:
		return true
	case <-w.done:
		return false
	}
}
