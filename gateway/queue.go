package gateway

import (
	"context"
	"sync"
	"sync/atomic"
)

// queues runs the turns of each session one at a time, in the order they
// were queued, and the turns of different sessions in parallel. A session
// has a worker goroutine only while it has turns waiting, so idle sessions
// cost nothing. The queue itself is durable: turns are stored before they
// are pushed here, and Start pushes the ones a crash left behind.
type queues struct {
	run   func(TurnRef)
	spawn func(func()) // starts a worker (pool.Go)
	depth atomic.Int64

	mu       sync.Mutex
	active   map[string][]TurnRef // session ID → turns not yet started (empty while claimed)
	draining bool
	idle     chan struct{} // closed when active becomes empty while draining
	wg       sync.WaitGroup
}

func newQueues(run func(TurnRef), spawn func(func())) *queues {
	return &queues{run: run, spawn: spawn, active: make(map[string][]TurnRef)}
}

// push appends t to its session's queue, starting a worker if the session
// has none.
func (q *queues) push(t TurnRef) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.draining && q.idle == nil {
		// Stopped: the turn is stored and runs on the next start.
		return
	}
	q.depth.Add(1)
	waiting, running := q.active[t.SessionID]
	q.active[t.SessionID] = append(waiting, t)
	if !running {
		q.wg.Add(1)
		// Started once the lock is let go: push runs on the store's
		// committer, and no one should wait for a new goroutine there.
		defer q.spawn(func() { q.work(t.SessionID) })
	}
}

// claim makes session busy without queueing a turn, so turns pushed
// meanwhile wait for release; it fails while the session has a turn
// waiting or running, or the queues are draining. The gateway's instant
// path (instant.go) runs a turn on the caller's goroutine this way.
func (q *queues) claim(session string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, running := q.active[session]; running || q.draining {
		return false
	}
	q.active[session] = []TurnRef{}
	q.depth.Add(1) // the claimer's turn runs
	return true
}

// release ends a claim: turns pushed during it get a worker.
func (q *queues) release(session string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.depth.Add(-1)
	if len(q.active[session]) == 0 || q.idle == nil && q.draining {
		q.depth.Add(-int64(len(q.active[session])))
		delete(q.active, session)
		q.signalIdle()
		return
	}
	q.wg.Add(1)
	defer q.spawn(func() { q.work(session) })
}

// work runs one session's turns until its queue is empty, or draining
// stopped early.
func (q *queues) work(session string) {
	defer q.wg.Done()
	ran := false
	for {
		q.mu.Lock()
		if ran {
			// Counted down under the lock, with the session's end below,
			// so a depth of zero means every session is free to claim.
			q.depth.Add(-1)
		}
		waiting := q.active[session]
		if len(waiting) == 0 || q.idle == nil && q.draining {
			// Turns left behind stay stored for the next start.
			q.depth.Add(-int64(len(waiting)))
			delete(q.active, session)
			q.signalIdle()
			q.mu.Unlock()
			return
		}
		t := waiting[0]
		q.active[session] = waiting[1:]
		q.mu.Unlock()

		q.run(t)
		ran = true
	}
}

// signalIdle closes idle once no session is active. Callers hold mu.
func (q *queues) signalIdle() {
	if q.idle != nil && len(q.active) == 0 {
		close(q.idle)
		q.idle = nil
	}
}

// drain waits until every queued turn has run or ctx ends. When ctx ends
// first, workers finish the turn they are in and start no other; the rest
// stay stored for the next start.
func (q *queues) drain(ctx context.Context) error {
	q.mu.Lock()
	q.draining = true
	if len(q.active) == 0 {
		q.mu.Unlock()
		return nil
	}
	idle := make(chan struct{})
	q.idle = idle
	q.mu.Unlock()

	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		q.mu.Lock()
		q.idle = nil // from now on workers stop after their current turn
		q.mu.Unlock()
		return ctx.Err()
	}
}

// wait blocks until every worker has exited.
func (q *queues) wait() { q.wg.Wait() }
