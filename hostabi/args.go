package hostabi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
)

// decodeArgs checks the size of args and splits the JSON array into one
// raw value per argument, checking the arity of f.
func (d *Dispatcher) decodeArgs(f Func, args json.RawMessage) ([]json.RawMessage, error) {
	max := d.limits.MaxValueBytes
	if f.MaxArgBytes > 0 && f.MaxArgBytes < max {
		max = f.MaxArgBytes
	}
	if int64(len(args)) > max {
		return nil, d.limitError(sandbox.LimitValueBytes, max)
	}
	var argv []json.RawMessage
	if trimmed := bytes.TrimSpace(args); len(trimmed) > 0 && string(trimmed) != "[]" {
		if err := decodeStrict(args, &argv); err != nil {
			return nil, fault.Wrap(fault.Validation, err, "host "+f.Name, "node %q: arguments must be a JSON array", d.cfg.Node)
		}
		if argv == nil { // null
			return nil, fault.New(fault.Validation, "host "+f.Name, "node %q: arguments must be a JSON array, not null", d.cfg.Node)
		}
	}
	if len(argv) < f.minArgs || len(argv) > f.maxArgs {
		return nil, fault.New(fault.Validation, "host "+f.Name, "node %q: %s, got %d", d.cfg.Node, arityText(f), len(argv))
	}
	return argv, nil
}

func arityText(f Func) string {
	switch {
	case f.maxArgs == 0:
		return "takes no arguments"
	case f.minArgs == f.maxArgs && f.maxArgs == 1:
		return "takes 1 argument"
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("takes %d arguments", f.maxArgs)
	}
	return fmt.Sprintf("takes %d to %d arguments", f.minArgs, f.maxArgs)
}

// errTrailing reports data after the one JSON value of an input.
var errTrailing = errors.New("trailing data after the value")

// decodeStrict decodes exactly one JSON value into out, refusing unknown
// object fields and trailing data. Targets without struct fields take the
// cheaper json.Unmarshal, which refuses trailing data too.
func decodeStrict(data []byte, out any) error {
	switch out.(type) {
	case *string, *[]json.RawMessage, *json.RawMessage, *map[string]any:
		return json.Unmarshal(data, out)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errTrailing
	}
	return nil
}

// argError is the Validation error of argument i of f.
func (d *Dispatcher) argError(f string, i int, err error, format string, args ...any) error {
	msg := "node %q: argument %d: " + format
	all := append([]any{d.cfg.Node, i}, args...)
	if err != nil {
		return fault.Wrap(fault.Validation, err, "host "+f, msg, all...)
	}
	return fault.New(fault.Validation, "host "+f, msg, all...)
}

// argString decodes argument i of f as a string.
func (d *Dispatcher) argString(f string, argv []json.RawMessage, i int, what string) (string, error) {
	var s string
	if isNull(argv[i]) {
		return "", d.argError(f, i, nil, "%s: want a string, got null", what)
	}
	if err := decodeStrict(argv[i], &s); err != nil {
		return "", d.argError(f, i, err, "%s: want a string", what)
	}
	return s, nil
}

// argObject decodes argument i of f strictly into out (a pointer to a
// struct or map); null is refused.
func (d *Dispatcher) argObject(f string, argv []json.RawMessage, i int, what string, out any) error {
	if isNull(argv[i]) {
		return d.argError(f, i, nil, "%s: want an object, got null", what)
	}
	if err := decodeStrict(argv[i], out); err != nil {
		return d.argError(f, i, err, "%s: want %s", what, "an object")
	}
	return nil
}

// optArg returns argument i, or null when it was not given.
func optArg(argv []json.RawMessage, i int) json.RawMessage {
	if i < len(argv) {
		return argv[i]
	}
	return json.RawMessage("null")
}

func isNull(v json.RawMessage) bool {
	return string(bytes.TrimSpace(v)) == "null"
}
