package graph

import (
	"context"
	"maps"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
)

type startNodeKey struct{}

// WithStartNode returns ctx telling Execute to start at node id instead of
// the document's entry (a resume checkpoint still wins). An id that is not
// a node fails Execute with Validation.
func WithStartNode(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, startNodeKey{}, id)
}

// StartNodeFromContext returns the start node WithStartNode put on ctx.
func StartNodeFromContext(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(startNodeKey{}).(string)
	return id, ok
}

// frontier returns the first frontier of a run (REF 5.2.1): the
// successors of the resume checkpoint's steps, then a WithStartNode
// override, then the entry.
func (r *runState) frontier(ctx context.Context) ([]string, error) {
	if cp := r.run.ResumeFrom; cp != nil {
		return r.resume(ctx, cp)
	}
	if id, ok := StartNodeFromContext(ctx); ok {
		if _, known := r.e.nodes[id]; !known {
			return nil, fault.New(fault.Validation, opExecute, "graph %q: start node %q is not a node", r.e.doc.Name, id)
		}
		return []string{id}, nil
	}
	return r.e.entryWave, nil
}

// resume restores the checkpoint's board and iterations and returns the
// successors of its steps, with the conditions evaluated now (REF
// 5.5.3). __interrupted_node of the interrupted attempt is removed.
func (r *runState) resume(ctx context.Context, cp *agent.Checkpoint) ([]string, error) {
	if err := cp.Validate(); err != nil {
		return nil, fault.Wrap(fault.Validation, err, opExecute, "graph %q: resume", r.e.doc.Name)
	}
	if cp.ExecID != r.run.ID {
		return nil, fault.New(fault.Validation, opExecute,
			"graph %q: checkpoint %q does not belong to run %q (forking needs a fresh run)", r.e.doc.Name, cp.ExecID, r.run.ID)
	}
	if err := r.e.CanResume(*cp); err != nil {
		return nil, err
	}
	restored := cp.Board.Clone()
	r.board.Vars, r.board.Channels = restored.Vars, restored.Channels
	delete(r.board.Vars, VarInterruptedNode)
	r.changes.unknown = true // a board the store may not hold
	r.iterations = cp.Iteration
	return r.successors(ctx, cp.Steps)
}

// CanResume reports whether cp can resume on this graph (REF
// 5.5.3): a spec version, when set, must be the graph's (NotAvailable
// otherwise); the steps must be non-empty (Validation) and name nodes of
// the graph (NotAvailable: the graph changed); the board must be present
// (Validation); and the iteration must not exceed max_iterations
// (BudgetExceeded).
func (e *Engine) CanResume(cp agent.Checkpoint) error {
	const op = "resume graph"
	if cp.SpecVersion != "" && cp.SpecVersion != e.doc.SpecVersion() {
		return fault.New(fault.NotAvailable, op, "graph %q: checkpoint %q is of spec version %q, the graph is %q",
			e.doc.Name, cp.ExecID, cp.SpecVersion, e.doc.SpecVersion())
	}
	if len(cp.Steps) == 0 {
		return fault.New(fault.Validation, op, "graph %q: checkpoint %q has no steps", e.doc.Name, cp.ExecID)
	}
	for _, s := range cp.Steps {
		if _, ok := e.nodes[s]; !ok {
			return fault.New(fault.NotAvailable, op, "graph %q: checkpoint %q: step %q is not a node of the graph", e.doc.Name, cp.ExecID, s)
		}
	}
	if cp.Board == nil {
		return fault.New(fault.Validation, op, "graph %q: checkpoint %q has no board", e.doc.Name, cp.ExecID)
	}
	if cp.Iteration > e.opts.MaxIterations {
		return fault.New(fault.BudgetExceeded, op, "graph %q: checkpoint %q is at iteration %d, past max_iterations %d",
			e.doc.Name, cp.ExecID, cp.Iteration, e.opts.MaxIterations)
	}
	return nil
}

// SuggestCheckpoint does nothing: a checkpoint is already written at every
// wave boundary (REF 5.5.4).
func (e *Engine) SuggestCheckpoint() {}

// saveCtx is the context of a run's checkpoint saves: the run's values
// without its cancellation, each save bounded by the checkpoint timeout.
// One saveCtx serves every wave of a run, re-armed per save, rather than a
// timer-backed context per wave; its timer starts only when a save asks
// for Done, so a save that only checks Err (an in-memory store) costs no
// timer at all. Its error, once a save ran out of time, is
// context.DeadlineExceeded.
type saveCtx struct {
	values context.Context // the run's ctx without its cancellation

	mu       sync.Mutex
	armed    bool // a save is running
	deadline time.Time
	done     chan struct{} // made by Done; closed when the armed save runs out of time
	err      error
	timer    *time.Timer // started by Done
	ticking  bool        // the timer runs for the armed save
}

var _ context.Context = (*saveCtx)(nil)

// saveContext returns the run's saveCtx, with the values of ctx.
func (r *runState) saveContext(ctx context.Context) *saveCtx {
	r.own.save.values = context.WithoutCancel(ctx)
	return &r.own.save
}

// arm readies a context for one save of at most d: s itself, or a fresh
// one with the same values when s ran out of time in an earlier save. A
// context that ended stays ended — a context derived from it (a store's
// WithCancel) reads its Err once its Done is closed, perhaps only after
// the next save began — so the caller keeps the returned one for the
// saves after.
func (s *saveCtx) arm(d time.Duration) *saveCtx { return s.armAt(time.Now(), d) }

// armAt is arm for a save that starts at now.
func (s *saveCtx) armAt(now time.Time, d time.Duration) *saveCtx {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		s = &saveCtx{values: s.values}
	}
	s.armed, s.deadline = true, now.Add(d)
	return s
}

// disarm ends a save: its time no longer runs.
func (s *saveCtx) disarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	if s.ticking {
		s.timer.Stop()
		s.ticking = false
	}
}

// stop releases the timer; the run is over.
func (s *saveCtx) stop() { s.disarm() }

// expire ends the armed save when its deadline has passed; a firing of a
// timer armed for an earlier save, late, finds a later deadline (or no
// save) and does nothing.
func (s *saveCtx) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
}

// expireLocked sets the error and closes done when the armed save's
// deadline has passed; s.mu is held. The deadline carries the monotonic
// reading of the save's start, so only the monotonic clock is read.
func (s *saveCtx) expireLocked() {
	if !s.armed || s.err != nil || time.Until(s.deadline) > 0 {
		return
	}
	s.err = context.DeadlineExceeded
	if s.done != nil {
		close(s.done)
	}
}

func (s *saveCtx) Deadline() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline, true
}

// Done returns the channel that closes when the armed save runs out of
// time, starting the timer that closes it.
func (s *saveCtx) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
		if s.err != nil {
			close(s.done)
			return s.done
		}
	}
	if s.armed && s.err == nil && !s.ticking {
		d := time.Until(s.deadline)
		if s.timer == nil {
			s.timer = time.AfterFunc(d, s.expire)
		} else {
			s.timer.Reset(d)
		}
		s.ticking = true
	}
	return s.done
}

func (s *saveCtx) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked()
	return s.err
}

func (s *saveCtx) Value(key any) any { return s.values.Value(key) }

// checkpoint writes the wave-boundary checkpoint through the host; a
// failure is only logged. steps is the wave's own slice, which nothing
// changes afterwards: the checkpoint holds it as it is.
func (r *runState) checkpoint(ctx context.Context, steps []string) {
	if r.save == nil {
		r.save = r.saveContext(ctx)
	}
	// The board goes as it is: a Checkpointer copies what it keeps
	// (agent.Checkpointer), and nothing changes the board during the save.
	// A sequential wave ended when its last node completed.
	now := r.waveEnd
	if now.IsZero() {
		now = time.Now()
	}
	r.waveEnd = time.Time{}
	cp := agent.Checkpoint{
		ExecID: r.run.ID, Steps: steps, Iteration: r.iterations, Board: r.board,
		Attributes: r.e.cpAttrs, Timestamp: now.UTC(),
		OriginalStartedAt: r.run.StartedAt, SpecVersion: r.e.doc.SpecVersion(),
		Changes: r.changes.next(),
	}
	// A wave that completed is worth saving even when the run is being
	// cancelled: the save gets a ctx of its own.
	r.save = r.save.armAt(now, r.e.opts.RunEndPublishTimeout)
	err := r.host.Checkpoint(r.save, cp)
	r.save.disarm()
	r.changes.saved(err == nil)
	if err != nil {
		r.logger.WarnContext(ctx, "graph checkpoint failed", "graph", r.e.doc.Name, "run_id", r.run.ID,
			"iteration", r.iterations, "error", err)
	}
}

// boardChanges tracks what the waves since the run's last accepted
// checkpoint changed on its board, so that a store may keep the change
// rather than the board (agent.BoardChanges). It knows the writes of the
// engine's script handlers exactly (sandbox.Writes) and finds those of its
// inference, tool and delegate handlers, and of a parallel wave's merge, by
// comparing the board's vars and channels around their step or wave
// (remember, compare, compareStrict); any other handler, a retry's rollback
// or a resume makes the change unknown, and the next checkpoint goes without changes (the store
// keeps the whole board), after which tracking starts again.
type boardChanges struct {
	writer    uint64 // drawn at the first checkpoint
	seq, base uint64
	unknown   bool
	vars      map[string]struct{}
	channels  map[string]int
	out       agent.BoardChanges // what next hands the store, reused
	// before is the board's vars and channel lengths before a step of a
	// shallow handler (remember), reused.
	before struct {
		vars  map[string]any
		lens  map[string]int
		first map[string]*message.Message // each channel's first message, for compareStrict
	}
}

// remember keeps what compare needs of board before a step of a handler
// that writes whole vars and appends to channels (builtNode.shallow): its
// vars, shallowly, and its channels' lengths.
func (b *boardChanges) remember(board *agent.Board) {
	if b.unknown {
		return
	}
	if b.before.vars == nil {
		b.before.vars, b.before.lens, b.before.first = map[string]any{}, map[string]int{}, map[string]*message.Message{}
	}
	clear(b.before.vars)
	clear(b.before.lens)
	clear(b.before.first)
	maps.Copy(b.before.vars, board.Vars)
	for name, msgs := range board.Channels {
		b.before.lens[name] = len(msgs)
		if len(msgs) > 0 {
			b.before.first[name] = &msgs[0]
		}
	}
}

// compareStrict is compare for a parallel wave, whose merge may replace a
// channel by another of the same length: a channel whose first message is
// not where it was counts as rewritten (from 0).
func (b *boardChanges) compareStrict(board *agent.Board) {
	if b.unknown || b.before.vars == nil {
		b.unknown = true
		return
	}
	for name, msgs := range board.Channels {
		if old, ok := b.before.first[name]; ok && len(msgs) > 0 && &msgs[0] != old {
			b.channel(name, 0)
		}
	}
	b.compare(true, board)
}

// compare records what a step of a handler that writes the board itself
// changed: when shallow, the vars that are not the values remember saw
// and the channels whose length changed (grown: appended after the old
// length; shrunk, created or removed: from 0); otherwise the change is
// unknown.
func (b *boardChanges) compare(shallow bool, board *agent.Board) {
	if b.unknown {
		return
	}
	if !shallow || b.before.vars == nil {
		b.unknown = true
		return
	}
	if b.vars == nil {
		b.vars = map[string]struct{}{}
	}
	for k, v := range board.Vars {
		if old, ok := b.before.vars[k]; !ok || !sameValue(old, v) {
			b.vars[k] = struct{}{}
		}
	}
	for k := range b.before.vars {
		if _, ok := board.Vars[k]; !ok {
			b.vars[k] = struct{}{}
		}
	}
	for name, msgs := range board.Channels {
		switch old, ok := b.before.lens[name]; {
		case !ok || len(msgs) < old:
			b.channel(name, 0)
		case len(msgs) > old:
			b.channel(name, old)
		}
	}
	for name := range b.before.lens {
		if _, ok := board.Channels[name]; !ok {
			b.channel(name, 0)
		}
	}
	clear(b.before.vars) // compared once: a retry's rollback makes the change unknown
}

// sameValue reports whether a and b are the same value: equal when
// comparable, the same map or slice (same memory and length) otherwise. A
// value it cannot tell counts as changed.
func sameValue(a, b any) bool {
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	if !ra.IsValid() || !rb.IsValid() {
		return !ra.IsValid() && !rb.IsValid()
	}
	if ra.Type() != rb.Type() {
		return false
	}
	switch ra.Kind() {
	case reflect.Map, reflect.Slice:
		return ra.UnsafePointer() == rb.UnsafePointer() && ra.Len() == rb.Len()
	}
	return ra.Comparable() && a == b
}

// noteWrites records ws, just applied to board.
func (b *boardChanges) noteWrites(ws sandbox.Writes, board *agent.Board) {
	if b.unknown || len(ws) == 0 {
		return
	}
	var appended map[string]int // messages ws appended per channel not yet tracked
	for _, w := range ws {
		switch w.Op {
		case sandbox.SetVar, sandbox.DeleteVar:
			if b.vars == nil {
				b.vars = map[string]struct{}{}
			}
			b.vars[w.Name] = struct{}{}
		case sandbox.SetChannel:
			b.channel(w.Name, 0)
			delete(appended, w.Name)
		case sandbox.AppendChannel:
			if _, tracked := b.channels[w.Name]; !tracked {
				if appended == nil {
					appended = map[string]int{}
				}
				appended[w.Name] += len(w.Messages)
			}
		default:
			b.unknown = true
			return
		}
	}
	for name, n := range appended {
		b.channel(name, max(0, len(board.Channels[name])-n))
	}
}

// channel records that channel name changed from message from on.
func (b *boardChanges) channel(name string, from int) {
	if b.channels == nil {
		b.channels = map[string]int{}
	}
	if old, ok := b.channels[name]; !ok || from < old {
		b.channels[name] = from
	}
}

// next numbers the next checkpoint and returns its changes, nil when they
// are unknown. __interrupted_node, which the engine sets itself, always
// counts as changed.
func (b *boardChanges) next() *agent.BoardChanges {
	for b.writer == 0 {
		b.writer = rand.Uint64()
	}
	b.seq++
	if b.unknown {
		return nil
	}
	if b.vars == nil {
		b.vars = map[string]struct{}{}
	}
	b.vars[VarInterruptedNode] = struct{}{}
	b.out = agent.BoardChanges{Writer: b.writer, Seq: b.seq, Base: b.base, Vars: b.vars, Channels: b.channels}
	return &b.out
}

// saved records the outcome of the checkpoint next numbered: accepted, the
// changes start again from it; refused, they keep adding up.
func (b *boardChanges) saved(ok bool) {
	if !ok {
		return
	}
	b.base, b.unknown = b.seq, false
	clear(b.vars)
	clear(b.channels)
}
