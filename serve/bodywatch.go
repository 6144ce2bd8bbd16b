package serve

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// bodyWatcher bounds the reading of request bodies by
// Options.BodyReadTimeout without a timer per request (arming one wakes
// the network poller, which every request would feel): a sweep every
// quarter of the bound (10 ms to 1 s) aborts the read of each body still
// unread past its deadline by setting its connection's read deadline in
// the past, so that the read fails, the handler answers 400 and the
// connection closes after the answer. A body is thus refused within the
// bound and a quarter of it (REF 11.8.7). The sweeping goroutine starts
// with the first body and stops at close.
type bodyWatcher struct {
	every time.Duration

	mu      sync.Mutex
	bodies  map[*bodyWatch]struct{}
	started bool
	closed  bool
	stop    chan struct{}
	done    chan struct{}
}

// bodyWatch is one body being read under the bound.
type bodyWatch struct {
	rc       *http.ResponseController
	deadline time.Time
}

func newBodyWatcher(bound time.Duration) *bodyWatcher {
	return &bodyWatcher{every: min(max(bound/4, 10*time.Millisecond), time.Second),
		bodies: map[*bodyWatch]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
}

// watch bounds the body of the request that rc controls by bound from now.
func (bw *bodyWatcher) watch(rc *http.ResponseController, bound time.Duration) *bodyWatch {
	b := &bodyWatch{rc: rc, deadline: time.Now().Add(bound)}
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if bw.closed { // no sweeps: the connection's own deadline bounds it
		_ = rc.SetReadDeadline(b.deadline)
		return b
	}
	bw.bodies[b] = struct{}{}
	if !bw.started {
		bw.started = true
		go bw.loop()
	}
	return b
}

// unwatch stops watching b and reports whether it was still watched (its
// read was not aborted). After it returns, the watcher does not use b's
// controller. A body watched after close has its own deadline, which
// stays.
func (bw *bodyWatcher) unwatch(b *bodyWatch) bool {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	_, ok := bw.bodies[b]
	delete(bw.bodies, b)
	return ok
}

// loop sweeps until close.
func (bw *bodyWatcher) loop() {
	defer close(bw.done)
	t := time.NewTicker(bw.every)
	defer t.Stop()
	for {
		select {
		case <-bw.stop:
			return
		case now := <-t.C:
			bw.sweep(now)
		}
	}
}

// sweep aborts the reads of the bodies past their deadline.
func (bw *bodyWatcher) sweep(now time.Time) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	for b := range bw.bodies {
		if now.After(b.deadline) {
			_ = b.rc.SetReadDeadline(time.Unix(1, 0))
			delete(bw.bodies, b)
		}
	}
}

// close stops the sweeping goroutine and waits for it. It is idempotent.
func (bw *bodyWatcher) close() {
	bw.mu.Lock()
	if bw.closed {
		bw.mu.Unlock()
		return
	}
	bw.closed = true
	started := bw.started
	close(bw.stop)
	bw.mu.Unlock()
	if started {
		<-bw.done
	}
}

// deadlineBody is a request body under the watcher's bound until it has
// been read whole, so that the bound covers the body and never a stream
// or a wait that follows it. A body that failed (its read aborted) keeps
// its connection's past deadline: the server's discarding of the rest
// fails too, and the connection closes after the answer.
type deadlineBody struct {
	io.ReadCloser
	bodies *bodyWatcher
	watch  *bodyWatch
	done   bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		b.bodies.unwatch(b.watch)
	}
	return n, err
}

// handlerDone ends the watch when the handler returns. A body the
// handler left unread keeps its bound as a read deadline, so that the
// server's discarding of the rest is bounded as the read was.
func (b *deadlineBody) handlerDone() {
	if b.bodies.unwatch(b.watch) && !b.done {
		_ = b.watch.rc.SetReadDeadline(b.watch.deadline)
	}
}
