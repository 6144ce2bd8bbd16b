package guest

import (
	"encoding/json"
	"maps"
	"slices"
)

// MainChannel is the name of the board's main message channel.
const MainChannel = "__main_channel"

// GetVar returns the board var name; ok is false when it is not set.
func GetVar(name string) (v any, ok bool, err error) {
	res, err := corral("board.getVar", name)
	if err != nil || len(res) == 0 {
		return nil, false, err
	}
	return v, true, into(res, nil, &v)
}

// SetVar writes the board var name (its JSON form).
func SetVar(name string, v any) error {
	_, err := corral("board.setVar", name, v)
	return err
}

// DeleteVar removes the board var name.
func DeleteVar(name string) error {
	_, err := corral("board.deleteVar", name)
	return err
}

// HasVar reports whether the board var name is set.
func HasVar(name string) (bool, error) {
	var ok bool
	res, err := corral("board.hasVar", name)
	return ok, into(res, err, &ok)
}

// Vars returns a copy of every board var.
func Vars() (map[string]any, error) {
	var out map[string]any
	res, err := corral("board.getVars")
	return out, into(res, err, &out)
}

// Resolve resolves the ${board.path} references of s, keeping the type of
// a lone reference.
func Resolve(s string) (any, error) {
	var out any
	res, err := corral("board.resolve", s)
	return out, into(res, err, &out)
}

// ResolveString resolves the ${board.path} references of s into a string.
func ResolveString(s string) (string, error) {
	var out string
	res, err := corral("board.resolveString", s)
	return out, into(res, err, &out)
}

// Channel returns the messages of the channel name, in wire form (never
// nil).
func Channel(name string) ([]json.RawMessage, error) {
	var out []json.RawMessage
	res, err := corral("board.channel", name)
	if err := into(res, err, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []json.RawMessage{}
	}
	return out, nil
}

// SetChannel replaces the channel name with msgs (each a message in wire
// form, or a value that encodes to one).
func SetChannel(name string, msgs any) error {
	_, err := corral("board.setChannel", name, msgs)
	return err
}

// AppendChannel appends msgs (a message or an array of messages) to the
// channel name.
func AppendChannel(name string, msgs any) error {
	_, err := corral("board.appendChannel", name, msgs)
	return err
}

// CancelNode cancels a sibling branch of the current parallel wave
// (parallel.cancelNode); false outside a parallel wave.
func CancelNode(node, reason string) (bool, error) {
	var ok bool
	res, err := corral("parallel.cancelNode", node, reason)
	return ok, into(res, err, &ok)
}

// Done ends the call at once with success; it does not return.
func Done() {
	_, _ = corral("signal.done")
	panic("guest: a signal returned")
}

// InterruptRun ends the call with an interrupt of cause (user_input,
// user_cancel, host_shutdown, custom) and message; it does not return.
func InterruptRun(cause, message string) {
	_, _ = corral("signal.interrupt", map[string]any{"kind": cause, "message": message})
	panic("guest: a signal returned")
}

// Fail ends the call with an error of class kind (validation, not_found,
// budget_exceeded, policy_denied, not_available, internal) and message,
// with an optional JSON detail; it does not return.
func Fail(kind, message string, detail any) {
	arg := map[string]any{"kind": kind, "message": message}
	if detail != nil {
		arg["detail"] = detail
	}
	_, _ = corral("signal.error", arg)
	panic("guest: a signal returned")
}

// apply writes out to the board.
func apply(out Output) error {
	for _, k := range slices.Sorted(maps.Keys(out.Vars)) {
		if err := SetVar(k, out.Vars[k]); err != nil {
			return err
		}
	}
	if len(out.Messages) > 0 {
		return AppendChannel(MainChannel, out.Messages)
	}
	return nil
}

// HostFunctions lists the functions the host binds in module "host",
// sorted: every function of the catalog, granted or not.
func HostFunctions() ([]string, error) {
	var out []string
	res, err := corral("host.functions")
	return out, into(res, err, &out)
}
