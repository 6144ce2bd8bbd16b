package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Invoke runs one node script: the export inv.Script.Entry of the module
// inv.Script.Module, in a fresh instance (or, inside a run begun with
// BeginRun, the run's instance of a heavy module). See sandbox.Runtime for
// the errors.
func (r *Runtime) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	op := opFor("invoke", inv.Node)
	if err := ctx.Err(); err != nil {
		return sandbox.Outcome{}, fault.FromContext(err, op)
	}
	if r.isClosed() {
		return sandbox.Outcome{}, fault.New(fault.NotAvailable, op, "runtime closed")
	}
	if len(inv.Script.Module) == 0 {
		return sandbox.Outcome{}, fault.New(fault.Validation, op, "the wasm runtime runs a WebAssembly module, not JavaScript source")
	}
	limits, err := r.callLimits(inv.Limits, op, inv.Node)
	if err != nil {
		return sandbox.Outcome{}, err
	}
	m, err := r.compile(ctx, inv.Node, inv.Script.Module)
	if err != nil {
		return sandbox.Outcome{}, fmt.Errorf("%s: %w", op, err)
	}
	defer r.release(m)
	if err := m.exportsFor(inv.Script.Entry); err != nil {
		return sandbox.Outcome{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := r.acquire(ctx, op); err != nil {
		return sandbox.Outcome{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, limits.WallTime)
	defer cancel()
	stopOnClose := context.AfterFunc(r.closeCtx, cancel)
	defer stopOnClose()
	st := &callState{rt: r, ctx: callCtx, parent: ctx, inv: inv, op: op, limits: limits, slotHeld: true}
	st.board.Reset(inv.Board, inv.BoardBytes)
	defer func() { r.leave(st.slotHeld) }()
	err = r.run(callCtx, ctx, m, st)
	return sandbox.Outcome{Writes: st.board.Writes()}, err
}

// Check checks s as Invoke would before its first call, without running
// any of it: the module against the runtime's bounds and its module size
// limit, its compilation (kept in the runtime's cache for the calls that
// follow), and the ABI exports and Entry. It implements sandbox.Checker.
func (r *Runtime) Check(ctx context.Context, s sandbox.Script) error {
	op := opFor("check", s.Name)
	if r.isClosed() {
		return fault.New(fault.NotAvailable, op, "runtime closed")
	}
	if len(s.Module) == 0 {
		return fault.New(fault.Validation, op, "the wasm runtime runs a WebAssembly module, not JavaScript source")
	}
	m, err := r.compile(ctx, s.Name, s.Module)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer r.release(m)
	if err := m.exportsFor(s.Entry); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

var _ sandbox.Checker = (*Runtime)(nil)

// callLimits is the runtime's limits tightened by a call's own.
func (r *Runtime) callLimits(l sandbox.Limits, op, node string) (sandbox.Limits, error) {
	if err := l.Validate(); err != nil {
		return sandbox.Limits{}, fault.Wrap(fault.Validation, err, op, "node %q: limits", node)
	}
	return r.limits.Tighten(l), nil
}

// run gets an instance, calls the entry and keeps or closes the instance.
func (r *Runtime) run(ctx, parent context.Context, m *module, st *callState) error {
	scope := (*runScope)(nil)
	if m.heavy {
		scope = r.scope(st.inv.Run.RunID)
	}
	var inst *instance
	if scope != nil {
		inst = scope.take(m)
	}
	limit, _ := m.memoryLimit(st.limits)
	if inst != nil && inst.mem.size() > limit {
		// The instance grew past this call's tighter limit: a fresh one
		// (which instantiate refuses if the limit is below its minimum).
		inst.close()
		inst = nil
	}
	if inst == nil {
		var err error
		if inst, err = r.instantiate(ctx, m, st); err != nil {
			return st.classify(parent, err)
		}
	} else {
		inst.mem.setLimit(limit)
		inst.output.reset()
		inst.setCurrent(st)
	}
	err := st.call(ctx, inst)
	inst.setCurrent(nil)
	if err == nil && scope != nil {
		scope.put(m, inst)
		return nil
	}
	inst.close()
	if err != nil {
		return st.classify(parent, st.failure(ctx, inst, err, "call"))
	}
	return nil
}

// call writes the input into the guest and calls the entry.
func (st *callState) call(ctx context.Context, inst *instance) error {
	input, err := st.input()
	if err != nil {
		return err
	}
	cctx := context.WithValue(ctx, callKey{}, st)
	stack := []uint64{api.EncodeU32(uint32(len(input)))}
	if err := inst.alloc.CallWithStack(cctx, stack); err != nil {
		return err
	}
	ptr := api.DecodeU32(stack[0])
	if ptr == 0 || !inst.mod.Memory().Write(ptr, input) {
		return &sandbox.ScriptError{Node: st.inv.Node, Kind: fault.Internal,
			Message: fmt.Sprintf("%s returned %d for %d bytes, outside the guest's memory", ExportAlloc, ptr, len(input))}
	}
	entry := inst.mod.ExportedFunction(st.inv.Script.Entry)
	return entry.CallWithStack(cctx, []uint64{api.EncodeU32(ptr), api.EncodeU32(uint32(len(input)))})
}

// input is the JSON the entry receives (docs/hostabi.md).
func (st *callState) input() ([]byte, error) {
	cfg := st.inv.CallConfig()
	if cfg == nil {
		cfg = map[string]any{}
	}
	in := struct {
		Node   string          `json:"node"`
		Type   string          `json:"type"`
		Run    sandbox.RunInfo `json:"run"`
		Limits struct {
			StackDepth    int   `json:"stack_depth"`
			MemoryBytes   int64 `json:"memory_bytes"`
			MaxValueBytes int64 `json:"max_value_bytes"`
		} `json:"limits"`
		Config map[string]any `json:"config"`
	}{Node: st.inv.Node, Type: st.inv.Type, Run: st.inv.Run, Config: cfg}
	in.Limits.StackDepth, in.Limits.MemoryBytes, in.Limits.MaxValueBytes =
		st.limits.StackDepth, st.limits.MemoryBytes, st.limits.MaxValueBytes
	data, err := json.Marshal(in)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, st.op, "encode the input")
	}
	if int64(len(data)) > st.limits.MaxValueBytes {
		return nil, st.limitError(sandbox.LimitValueBytes)
	}
	return data, nil
}

// failure explains why the guest failed: a stop a host function recorded,
// the end of the call's context, a memory or stack limit, or a trap or an
// exit of the guest.
func (st *callState) failure(ctx context.Context, inst *instance, err error, during string) error {
	if reason := st.stopReason(); reason != nil {
		if _, ok := reason.(doneSignal); ok {
			return nil
		}
		return reason
	}
	var exit *sys.ExitError
	isExit := errors.As(err, &exit)
	if ctx.Err() != nil && (!isExit || exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) {
		return ctxDone{}
	}
	var fe *fault.Error
	var se *sandbox.ScriptError
	var le *sandbox.LimitError
	if errors.As(err, &fe) || errors.As(err, &se) || errors.As(err, &le) {
		return err
	}
	output, head := "", ""
	if inst != nil {
		output, head = inst.output.String(), inst.output.Head()
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "stack overflow") || strings.Contains(output, "stack overflow") ||
		strings.Contains(output, "goroutine stack exceeds"):
		return st.limitError(sandbox.LimitStack)
	case inst != nil && inst.mem.exhausted(), strings.Contains(output, "out of memory"):
		return st.limitError(sandbox.LimitMemory)
	}
	if during == "instantiate" && !isExit && !strings.HasPrefix(msg, "wasm error") {
		return fault.New(fault.Validation, "", "instantiate the module: %s", clip(firstLine(msg), maxMessageLen))
	}
	text := firstLine(msg)
	if isExit {
		text = fmt.Sprintf("the module exited with code %d", exit.ExitCode())
	}
	if o := strings.TrimSpace(head); o != "" {
		text += ": " + firstLines(o, 4)
	}
	return &sandbox.ScriptError{Node: st.inv.Node, Kind: fault.Internal, Message: clip(during+": "+text, maxMessageLen)}
}

// ctxDone marks a call that ended with its context.
type ctxDone struct{}

func (ctxDone) Error() string { return "context done" }

// classify maps ctxDone to the wall-time limit, the caller's context end
// or the runtime's close, and names the operation.
func (st *callState) classify(parent context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(ctxDone); ok {
		switch {
		case parent.Err() != nil:
			return fault.FromContext(parent.Err(), st.op)
		case st.rt.closeCtx.Err() != nil:
			return fault.New(fault.Aborted, st.op, "runtime closed")
		}
		return st.limitError(sandbox.LimitWallTime)
	}
	var le *sandbox.LimitError
	var se *sandbox.ScriptError
	if errors.As(err, &le) || errors.As(err, &se) || strings.HasPrefix(err.Error(), st.op) {
		return err
	}
	return fmt.Errorf("%s: %w", st.op, err)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, " | ")
}
