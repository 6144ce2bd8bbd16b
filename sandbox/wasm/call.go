package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/sandbox"
	"github.com/tetratelabs/wazero/api"
)

// callState is one Invoke as the host functions see it. It is reached
// through the context of the guest call; host functions run on the
// calling goroutine, one at a time.
type callState struct {
	rt     *Runtime
	ctx    context.Context
	parent context.Context // the caller's ctx; ctx adds the wall time
	// slotHeld is whether the call holds its pool slot: it gives it up
	// during a blocking host call. Only the call's goroutine touches it.
	slotHeld bool
	inv      sandbox.Invocation
	op       string
	limits   sandbox.Limits

	pending []byte // the result of the last call, until the guest fetches it

	// hostErrs are the errors host calls returned to the guest, by code
	// and message: a guest that fails with one of them fails with the
	// host's own error.
	hostErrs map[hostabi.ErrorInfo]error

	mu   sync.Mutex
	stop error // why the call stopped; a doneSignal for signal.done

	// board is the invocation's board under the call's writes, which
	// counts its size from the size the invocation gives (or measured at
	// the first write).
	board sandbox.BoardView
}

type callKey struct{}

func stateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(callKey{}).(*callState)
	return st
}

// doneSignal is the stop reason of signal.done: the call succeeded.
type doneSignal struct{}

func (doneSignal) Error() string { return "done" }

// stopPanic unwinds the guest from a host function that stopped the call.
type stopPanic struct{}

// halt records reason (the first one wins) and unwinds the guest: no
// guest code runs after it.
func (st *callState) halt(reason error) {
	st.mu.Lock()
	if st.stop == nil {
		st.stop = reason
	}
	st.mu.Unlock()
	panic(stopPanic{})
}

func (st *callState) stopReason() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.stop
}

func (st *callState) limitError(limit string) *sandbox.LimitError {
	e := &sandbox.LimitError{Limit: limit, Node: st.inv.Node}
	switch limit {
	case sandbox.LimitWallTime:
		e.Max = int64(st.limits.WallTime)
	case sandbox.LimitMemory:
		e.Max = st.limits.MemoryBytes
	case sandbox.LimitStack:
		e.Max = int64(st.limits.StackDepth)
	case sandbox.LimitValueBytes:
		e.Max = st.limits.MaxValueBytes
	case sandbox.LimitBoardBytes:
		e.Max = st.limits.MaxBoardBytes
	}
	return e
}

// Result flags of a host function's i64 return value (docs/hostabi.md):
// the low 32 bits are the length of the pending payload, bit 32 says
// that the payload is an error {code, message}.
const (
	resultErrFlag = uint64(1) << 32
)

// guestFunc is the body of one imported function: it gets the argument
// bytes (a copy) and returns a JSON result (nil: no value) or an error.
type guestFunc func(ctx context.Context, st *callState, args []byte) (json.RawMessage, error)

// dispatch runs fn for a guest call with arguments at [ptr, ptr+n) and
// returns the i64 the guest sees. A pointer or length out of the guest's
// memory is a validation error of that call; arguments larger than
// max_value_bytes, and a limit fn hits, stop the call.
func (st *callState) dispatch(ctx context.Context, mod api.Module, ptr, n uint32, fn guestFunc) uint64 {
	if int64(n) > st.limits.MaxValueBytes {
		st.halt(st.limitError(sandbox.LimitValueBytes))
	}
	args, err := readGuest(mod, ptr, n)
	if err == nil {
		var res json.RawMessage
		res, err = fn(ctx, st, args)
		if err == nil {
			if int64(len(res)) > st.limits.MaxValueBytes {
				st.halt(st.limitError(sandbox.LimitValueBytes))
			}
			st.pending = res
			return uint64(len(res))
		}
	}
	var le *sandbox.LimitError
	if errors.As(err, &le) {
		st.halt(fmt.Errorf("%s: %w", st.op, err))
	}
	info := hostabi.ErrorInfoOf(err)
	info.Message = clip(info.Message, maxMessageLen)
	if st.hostErrs == nil {
		st.hostErrs = map[hostabi.ErrorInfo]error{}
	}
	if len(st.hostErrs) < maxHostErrors {
		st.hostErrs[info] = err
	}
	st.pending, _ = json.Marshal(info)
	return uint64(len(st.pending)) | resultErrFlag
}

// maxHostErrors bounds the host errors a call remembers.
const maxHostErrors = 256

// readGuest copies n bytes at ptr out of the guest's memory.
func readGuest(mod api.Module, ptr, n uint32) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	mem := mod.Memory()
	if mem == nil {
		return nil, fault.New(fault.Validation, "host abi", "the module has no memory")
	}
	view, ok := mem.Read(ptr, n)
	if !ok {
		return nil, fault.New(fault.Validation, "host abi", "arguments at %d, %d bytes, are outside the guest's memory of %d bytes",
			ptr, n, mem.Size())
	}
	return append([]byte(nil), view...), nil
}

// fetch copies the pending result to [ptr, ptr+n) of the guest's memory
// (corral.result): 0 on success, 1 when there is no pending result of n
// bytes or the range is outside the memory.
func (st *callState) fetch(mod api.Module, ptr, n uint32) uint32 {
	if st.pending == nil || uint32(len(st.pending)) != n {
		return 1
	}
	mem := mod.Memory()
	if mem == nil || !mem.Write(ptr, st.pending) {
		return 1
	}
	st.pending = nil
	return 0
}

// maxMessageLen bounds a message kept in an error.
const maxMessageLen = 1024

// clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
