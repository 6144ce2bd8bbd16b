package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
)

// nodeAPI is module "corral" but result: the functions a node script has
// beside the host catalog, as JavaScript has them on board, signal and
// parallel.
func nodeAPI() map[string]guestFunc {
	return map[string]guestFunc{
		"board.getVar":        boardGetVar,
		"board.setVar":        boardSetVar,
		"board.deleteVar":     boardDeleteVar,
		"board.hasVar":        boardHasVar,
		"board.getVars":       boardGetVars,
		"board.resolve":       boardResolve,
		"board.resolveString": boardResolveString,
		"board.channel":       boardChannel,
		"board.setChannel":    boardSetChannel,
		"board.appendChannel": boardAppendChannel,
		"parallel.cancelNode": parallelCancelNode,
		"signal.done":         signalDone,
		"signal.interrupt":    signalInterrupt,
		"signal.error":        signalError,
		"fail":                guestFail,
		"host.functions":      hostFunctions,
	}
}

// NodeFunctions lists the functions of module "corral", sorted.
func NodeFunctions() []string {
	return slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
		for n := range nodeAPI() {
			if !yield(n, true) {
				return
			}
		}
		yield("result", true)
	})))
}

// argv decodes the argument array of fn: between lo and hi values.
func argv(fn string, args []byte, lo, hi int) ([]json.RawMessage, error) {
	var out []json.RawMessage
	if t := bytes.TrimSpace(args); len(t) > 0 {
		if err := json.Unmarshal(t, &out); err != nil || out == nil {
			return nil, fault.New(fault.Validation, fn, "arguments must be a JSON array")
		}
	}
	if len(out) < lo || len(out) > hi {
		return nil, fault.New(fault.Validation, fn, "takes %d to %d arguments, got %d", lo, hi, len(out))
	}
	return out, nil
}

func argString(fn string, v json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fault.New(fault.Validation, fn, "want a string, got %.32s", v)
	}
	return s, nil
}

// oneString decodes an argument array of one string.
func oneString(fn string, args []byte) (string, error) {
	a, err := argv(fn, args, 1, 1)
	if err != nil {
		return "", err
	}
	return argString(fn, a[0])
}

func boardGetVar(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	name, err := oneString("board.getVar", args)
	if err != nil {
		return nil, err
	}
	v, ok := st.board.Var(name)
	if !ok {
		return nil, nil
	}
	return marshal("board.getVar", v)
}

func marshal(fn string, v any) (json.RawMessage, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, fn, "encode")
	}
	return data, nil
}

func boardSetVar(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	const fn = "board.setVar"
	a, err := argv(fn, args, 2, 2)
	if err != nil {
		return nil, err
	}
	name, err := varName(fn, a[0])
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(a[1], &v); err != nil {
		return nil, fault.Wrap(fault.Validation, err, fn, "value")
	}
	return nil, st.writeBoard(sandbox.Write{Op: sandbox.SetVar, Name: name, Value: v})
}

func boardDeleteVar(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	a, err := argv("board.deleteVar", args, 1, 1)
	if err != nil {
		return nil, err
	}
	name, err := varName("board.deleteVar", a[0])
	if err != nil {
		return nil, err
	}
	return nil, st.writeBoard(sandbox.Write{Op: sandbox.DeleteVar, Name: name})
}

func boardHasVar(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	name, err := oneString("board.hasVar", args)
	if err != nil {
		return nil, err
	}
	_, ok := st.board.Var(name)
	return marshal("board.hasVar", ok)
}

func boardGetVars(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	if _, err := argv("board.getVars", args, 0, 0); err != nil {
		return nil, err
	}
	vars := st.board.Vars()
	if vars == nil {
		vars = map[string]any{}
	}
	return marshal("board.getVars", vars)
}

func boardResolve(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	s, err := oneString("board.resolve", args)
	if err != nil {
		return nil, err
	}
	v, err := sandbox.Resolve(st.board.Vars(), s)
	if err != nil {
		return nil, err
	}
	return marshal("board.resolve", v)
}

func boardResolveString(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	s, err := oneString("board.resolveString", args)
	if err != nil {
		return nil, err
	}
	v, err := sandbox.ResolveString(st.board.Vars(), s)
	if err != nil {
		return nil, err
	}
	return marshal("board.resolveString", v)
}

func boardChannel(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	name, err := oneString("board.channel", args)
	if err != nil {
		return nil, err
	}
	msgs := st.board.Channel(name)
	if msgs == nil {
		msgs = []message.Message{}
	}
	return marshal("board.channel", msgs)
}

func boardSetChannel(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	const fn = "board.setChannel"
	a, err := argv(fn, args, 2, 2)
	if err != nil {
		return nil, err
	}
	name, err := channelName(fn, a[0])
	if err != nil {
		return nil, err
	}
	msgs, err := messages(fn, a[1], true)
	if err != nil {
		return nil, err
	}
	return nil, st.writeBoard(sandbox.Write{Op: sandbox.SetChannel, Name: name, Messages: msgs})
}

func boardAppendChannel(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	const fn = "board.appendChannel"
	a, err := argv(fn, args, 2, 2)
	if err != nil {
		return nil, err
	}
	name, err := channelName(fn, a[0])
	if err != nil {
		return nil, err
	}
	msgs, err := messages(fn, a[1], false)
	if err != nil || len(msgs) == 0 {
		return nil, err
	}
	return nil, st.writeBoard(sandbox.Write{Op: sandbox.AppendChannel, Name: name, Messages: msgs})
}

func varName(fn string, v json.RawMessage) (string, error) {
	name, err := argString(fn, v)
	switch {
	case err != nil:
		return "", err
	case name == "":
		return "", fault.New(fault.Validation, fn, "a var name must not be empty")
	case strings.HasPrefix(name, "__"):
		return "", fault.New(fault.Validation, fn, "var %q is reserved for the kernel", name)
	}
	return name, nil
}

func channelName(fn string, v json.RawMessage) (string, error) {
	name, err := argString(fn, v)
	switch {
	case err != nil:
		return "", err
	case name == "":
		return "", fault.New(fault.Validation, fn, "a channel name must not be empty")
	case strings.HasPrefix(name, "__") && name != agent.MainChannel:
		return "", fault.New(fault.Validation, fn, "channel %q is reserved for the kernel", name)
	}
	return name, nil
}

// messages decodes a message, or an array of them, strictly; listOnly
// requires an array. Nothing is returned unless every message is valid.
func messages(fn string, v json.RawMessage, listOnly bool) ([]message.Message, error) {
	t := bytes.TrimSpace(v)
	var raw []json.RawMessage
	switch {
	case len(t) > 0 && t[0] == '[':
		if err := json.Unmarshal(t, &raw); err != nil {
			return nil, fault.Wrap(fault.Validation, err, fn, "messages")
		}
	case listOnly:
		return nil, fault.New(fault.Validation, fn, "want an array of messages")
	case len(t) == 0 || string(t) == "null":
		return nil, fault.New(fault.Validation, fn, "want a message or an array of messages, got null")
	default:
		raw = []json.RawMessage{t}
	}
	out := make([]message.Message, 0, len(raw))
	for i, r := range raw {
		m, err := message.Decode(r)
		if err != nil {
			return nil, fault.Wrap(fault.Validation, err, fn, "message %d", i)
		}
		out = append(out, m)
	}
	return out, nil
}

func parallelCancelNode(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	const fn = "parallel.cancelNode"
	a, err := argv(fn, args, 1, 2)
	if err != nil {
		return nil, err
	}
	id, err := argString(fn, a[0])
	if err != nil {
		return nil, err
	}
	reason := ""
	if len(a) > 1 {
		if reason, err = argString(fn, a[1]); err != nil {
			return nil, err
		}
	}
	ok := st.inv.Parallel != nil && st.inv.Parallel(id, reason)
	return marshal(fn, ok)
}

func hostFunctions(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	if _, err := argv("host.functions", args, 0, 0); err != nil {
		return nil, err
	}
	return marshal("host.functions", st.rt.hostNames)
}

func signalDone(_ context.Context, st *callState, _ []byte) (json.RawMessage, error) {
	st.halt(doneSignal{})
	return nil, nil
}

// signalArg reads a signal's argument: a message, or {kind, message,
// detail}.
func signalArg(fn string, args []byte) (kind, msg string, detail json.RawMessage, err error) {
	a, err := argv(fn, args, 0, 1)
	if err != nil || len(a) == 0 {
		return "", "", nil, err
	}
	var s string
	if json.Unmarshal(a[0], &s) == nil {
		return "", s, nil, nil
	}
	var o struct {
		Kind    string          `json:"kind"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(a[0], &o); err != nil {
		return "", "", nil, fault.New(fault.Validation, fn, "want a message or {kind, message, detail}")
	}
	return o.Kind, o.Message, o.Detail, nil
}

func signalInterrupt(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	kind, msg, detail, err := signalArg("signal.interrupt", args)
	if err != nil {
		return nil, err
	}
	intr := agent.Interrupt{Cause: interruptCause(kind), Detail: clip(msg, maxMessageLen)}
	if intr.Detail == "" && len(detail) > 0 {
		intr.Detail = clip(string(detail), maxMessageLen)
	}
	st.halt(fmt.Errorf("%s: %w", st.op, agent.Interrupted(intr)))
	return nil, nil
}

func interruptCause(kind string) agent.InterruptCause {
	switch c := agent.InterruptCause(kind); c {
	case agent.CauseUserCancel, agent.CauseUserInput, agent.CauseHostShutdown, agent.CauseCustom:
		return c
	}
	return agent.CauseCustom
}

func signalError(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	kind, msg, detail, err := signalArg("signal.error", args)
	if err != nil {
		return nil, err
	}
	if len(detail) == 0 || string(detail) == "null" {
		detail = nil
	}
	st.halt(&sandbox.ScriptError{Node: st.inv.Node, Kind: sandbox.SignalKind(kind), Message: clip(msg, maxMessageLen), Detail: detail})
	return nil, nil
}

// guestFail ends the call with the guest's uncaught error {code,
// message}: the host's own error when the guest got it from a host call,
// otherwise an internal script error.
func guestFail(_ context.Context, st *callState, args []byte) (json.RawMessage, error) {
	a, err := argv("fail", args, 1, 1)
	if err != nil {
		return nil, err
	}
	var info hostabi.ErrorInfo
	if json.Unmarshal(a[0], &info) != nil {
		_ = json.Unmarshal(a[0], &info.Message)
	}
	if herr, ok := st.hostErrs[info]; ok {
		st.halt(fmt.Errorf("%s: %w", st.op, herr))
	}
	st.halt(&sandbox.ScriptError{Node: st.inv.Node, Kind: fault.Internal, Message: clip(info.Message, maxMessageLen)})
	return nil, nil
}

// writeBoard makes a board write of the guest through the call's view of
// the board; one that would make the board larger than max_board_bytes is
// a LimitError, and is not made.
func (st *callState) writeBoard(w sandbox.Write) error {
	if _, ok := st.board.Write(w, st.limits.MaxBoardBytes); !ok {
		return st.limitError(sandbox.LimitBoardBytes)
	}
	return nil
}
