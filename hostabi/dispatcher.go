package hostabi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
)

// Config is what a Dispatcher serves: one node call of one run.
type Config struct {
	Host    agent.Host     // the turn's host; nil refuses every function
	Run     agent.Run      // ID, AgentID and Capabilities are used
	Node    string         // the calling node, named in errors, headers and the journal
	Limits  sandbox.Limits // zero fields take the defaults
	Journal *Journal       // where non-deterministic calls are recorded; nil records nothing
	Logger  *slog.Logger   // diagnostics (skipped emits, ignored usage errors); nil discards
	// Interrupts remembers the interrupt checkInterrupt saw; share one
	// latch across a run so that the engine sees what a script polled. Nil
	// gives the dispatcher a latch of its own.
	Interrupts *InterruptLatch
	// ForkID and BranchID are set for a node inside a parallel branch: its
	// emitted deltas are then speculative and carry both. Set both or
	// neither.
	ForkID, BranchID string
}

// Dispatcher is the host side of the host ABI for one node call: it checks
// every call's function name, grant, host capability, arguments and
// limits, runs the function and journals non-deterministic results. It
// implements sandbox.ABI and is safe for concurrent use.
type Dispatcher struct {
	cfg    Config
	limits sandbox.Limits
	funcs  []Func
	logger *slog.Logger
	latch  *InterruptLatch

	mu         sync.Mutex
	events     int
	eventBytes int64
	logBytes   int64
	skips      int          // emits skipped for a malformed payload
	calls      atomic.Int64 // host ABI calls made, the one running included
}

var _ sandbox.ABI = (*Dispatcher)(nil)

// NewDispatcher returns a dispatcher for cfg. Limits are completed with
// sandbox.DefaultLimits.
func NewDispatcher(cfg Config) *Dispatcher {
	d := &Dispatcher{cfg: cfg, limits: cfg.Limits.WithDefaults(), funcs: builtCatalog().funcs,
		logger: cfg.Logger, latch: cfg.Interrupts}
	if d.logger == nil {
		d.logger = slog.New(slog.DiscardHandler)
	}
	if d.latch == nil {
		d.latch = &InterruptLatch{}
	}
	return d
}

// Functions returns the catalog's names, sorted. Every name is callable;
// a refused one fails with PolicyDenied. The slice is shared by every
// dispatcher and read-only: a caller must not change it (Names returns a
// copy of its own).
func (d *Dispatcher) Functions() []string { return builtCatalog().functions }

// Events returns how many events this dispatcher has published or emitted
// and their payload bytes.
func (d *Dispatcher) Events() (count int, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.events, d.eventBytes
}

// Call runs the host function name with args, a JSON array (empty args
// means no arguments), and returns its JSON result. Errors carry a fault
// kind: NotFound for an unknown name; PolicyDenied when the document does
// not grant the function's capability or the host does not provide it;
// Validation for malformed arguments; a *sandbox.LimitError (BudgetExceeded)
// for a limit; otherwise the kind of the host's error (Timeout or Aborted
// when ctx ends).
func (d *Dispatcher) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	call := int(d.calls.Add(1))
	f, ok := lookupIn(d.funcs, name)
	if !ok {
		return nil, fault.New(fault.NotFound, "host abi", "node %q: unknown function %q", d.cfg.Node, abbreviate(name))
	}
	if err := d.permit(f); err != nil {
		return nil, err
	}
	argv, err := d.decodeArgs(f, args)
	if err != nil {
		return nil, err
	}
	if ctx == nil {
		return nil, fault.New(fault.Validation, "host "+f.Name, "node %q: ctx must not be nil", d.cfg.Node)
	}
	if err := ctx.Err(); err != nil {
		return nil, d.hostError(f.Name, err)
	}
	if f.NonDeterministic && d.cfg.Journal.Full() {
		return nil, d.limitError(sandbox.LimitJournalBytes, MaxJournalBytes)
	}
	var res json.RawMessage
	if f.NonDeterministic && d.cfg.Journal.Replaying() {
		res, err = d.replayCall(f, args, call) // a replay answers from the recording, never from the host
	} else {
		res, err = f.handler(ctx, d, argv)
	}
	if err == nil && int64(len(res)) > d.limits.MaxValueBytes {
		res, err = nil, d.limitError(sandbox.LimitValueBytes, d.limits.MaxValueBytes)
	}
	if f.NonDeterministic {
		d.journal(f, args, res, err)
	}
	return res, err
}

// permit checks the grant and the host capability of f.
func (d *Dispatcher) permit(f Func) error {
	if !grantedFunc(d.cfg.Run, f) {
		return fault.New(fault.PolicyDenied, "host "+f.Name,
			"capability %q is not granted to node %q (agent %q)", f.Capability, d.cfg.Node, d.cfg.Run.AgentID)
	}
	if agent.IsNil(d.cfg.Host) || (f.Requires != nil && !f.Requires(d.cfg.Host)) {
		return fault.New(fault.PolicyDenied, "host "+f.Name,
			"the host of node %q does not provide capability %q", d.cfg.Node, f.Capability)
	}
	return nil
}

// journal records a call of a non-deterministic function.
func (d *Dispatcher) journal(f Func, args, res json.RawMessage, err error) {
	if d.cfg.Journal == nil {
		return
	}
	e := Entry{Node: d.cfg.Node, Func: f.Name, Args: compactArgs(args)}
	if err != nil {
		info := ErrorInfoOf(err)
		e.Err = &info
	} else {
		e.Result = res
	}
	d.cfg.Journal.Record(e)
}

// compactArgs returns the argument array in compact form ("[]" for none).
func compactArgs(args json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if trimmed := bytes.TrimSpace(args); len(trimmed) == 0 || string(trimmed) == "[]" || json.Compact(&b, args) != nil {
		return json.RawMessage("[]")
	}
	return b.Bytes()
}

func (d *Dispatcher) limitError(limit string, max int64) error {
	return &sandbox.LimitError{Limit: limit, Node: d.cfg.Node, Max: max}
}

// InterruptLatch is a non-blocking interrupt poll that remembers the first
// interrupt it saw: every later poll returns it again. The zero value is
// ready; it is safe for concurrent use.
type InterruptLatch struct {
	mu      sync.Mutex
	seen    *agent.Interrupt
	done    chan struct{}         // made by Done, closed once seen is set
	waiters map[*latchWaiter]bool // the Waits in progress
}

// latchWaiter is a Wait in progress, as a Poll that found nothing asks
// it: a Wait that has taken an interrupt from the host's channel but not
// yet remembered it would otherwise hide it from the Poll.
type latchWaiter struct {
	sync   chan chan struct{} // a Poll's question; the Wait closes the answer while it holds nothing
	exited chan struct{}      // closed once the Wait returned, what it took remembered
}

// setLocked remembers intr; l.mu is held and seen is nil.
func (l *InterruptLatch) setLocked(intr agent.Interrupt) {
	l.seen = &intr
	if l.done != nil {
		close(l.done)
	}
}

// Done returns a channel that is closed once the latch remembers an
// interrupt, whoever polled it.
func (l *InterruptLatch) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if l.seen != nil {
			close(l.done)
		}
	}
	return l.done
}

// Wait blocks until the latch remembers an interrupt, taking one from ch
// (and remembering it) when one arrives there, and returns it; it returns
// false once stop is closed first. A nil or closed ch never interrupts,
// but an interrupt another poller remembers still ends the wait. An
// interrupt Wait takes from ch is in the latch before Wait returns: a
// caller that must not let an interrupt out of sight of other pollers
// (the engine's wave boundaries) closes stop and waits for Wait to return
// before it polls.
func (l *InterruptLatch) Wait(stop <-chan struct{}, ch <-chan agent.Interrupt) (agent.Interrupt, bool) {
	done := l.Done()
	w := &latchWaiter{sync: make(chan chan struct{}), exited: make(chan struct{})}
	l.mu.Lock()
	if l.waiters == nil {
		l.waiters = map[*latchWaiter]bool{}
	}
	l.waiters[w] = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.waiters, w)
		l.mu.Unlock()
		close(w.exited)
	}()
	for {
		select {
		case <-done:
			return l.Seen()
		case <-stop:
			return agent.Interrupt{}, false
		case answer := <-w.sync:
			close(answer) // nothing taken
		case intr, ok := <-ch:
			if !ok {
				ch = nil // closed: only another poller can still interrupt
				continue
			}
			l.remember(intr)
			return l.Seen()
		}
	}
}

// Poll returns the remembered interrupt, or takes one from ch without
// blocking and remembers it. A nil or closed ch never interrupts. An
// interrupt sent to ch before Poll is called is seen, even when a Wait
// took it from ch first: a Poll that finds nothing asks each Wait in
// progress whether it holds one, and waits for it to be remembered.
func (l *InterruptLatch) Poll(ch <-chan agent.Interrupt) (agent.Interrupt, bool) {
	l.mu.Lock()
	if l.seen != nil {
		defer l.mu.Unlock()
		return *l.seen, true
	}
	select {
	case intr, ok := <-ch:
		if ok {
			l.setLocked(intr)
			l.mu.Unlock()
			return intr, true
		}
	default:
	}
	waiters := make([]*latchWaiter, 0, len(l.waiters))
	for w := range l.waiters {
		waiters = append(waiters, w)
	}
	l.mu.Unlock()
	for _, w := range waiters {
		answer := make(chan struct{})
		select {
		case w.sync <- answer:
			<-answer
		case <-w.exited:
		}
	}
	return l.Seen()
}

// remember keeps intr as the latch's interrupt, unless it already has
// one: an interrupt taken from the host's channel by a watcher rather
// than by Poll.
func (l *InterruptLatch) remember(intr agent.Interrupt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.setLocked(intr)
	}
}

// Seen returns the remembered interrupt without polling.
func (l *InterruptLatch) Seen() (agent.Interrupt, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		return agent.Interrupt{}, false
	}
	return *l.seen, true
}

func abbreviate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// catalogTable is the catalog and its names, built once: neither changes,
// and a dispatcher (one per node step) only reads them.
type catalogTable struct {
	funcs []Func
	names []string
	// functions is what Dispatcher.Functions returns: a copy of names of
	// its own, full to capacity, so that a caller that breaks the
	// read-only rule (an append, a write) changes neither names nor the
	// catalog.
	functions []string
}

// builtCatalog returns the shared catalogTable. It is read-only.
var builtCatalog = sync.OnceValue(func() catalogTable {
	t := catalogTable{funcs: catalog()}
	for _, f := range t.funcs {
		t.names = append(t.names, f.Name)
	}
	t.functions = slices.Clip(slices.Clone(t.names))
	return t
})
