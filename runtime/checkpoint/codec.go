package checkpoint

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

// MaxExecIDBytes is the longest exec id a store accepts, so that the file
// name of a record and of its temporary file stays within what file systems
// allow.
const MaxExecIDBytes = 200

// ErrCorrupt matches, with errors.Is, every error about a stored record that
// cannot be read back (see CorruptError). Its kind is Internal.
var ErrCorrupt = fault.New(fault.Internal, "checkpoint", "corrupt record")

// CorruptError reports a stored record that is not valid JSON, does not pass
// Checkpoint.Validate, or holds another exec id than its key. It is of kind
// fault.Internal, not Validation: the caller's request was well formed, the
// store's own data is broken. errors.Is(err, ErrCorrupt) holds.
type CorruptError struct {
	Where  string // the record's location, such as its file path; may be empty
	Reason string // what is wrong with it
}

// Error reads "load checkpoint: <where> is corrupt: <reason>".
func (e *CorruptError) Error() string {
	if e.Where == "" {
		return "load checkpoint: corrupt record: " + e.Reason
	}
	return "load checkpoint: " + e.Where + " is corrupt: " + e.Reason
}

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Unwrap gives the error its kind, fault.Internal.
func (e *CorruptError) Unwrap() error { return fault.Internal }

// ValidateExecID checks an exec id used as a store key: it must not be
// blank, contain '/', '\' or a control character, be "." or "..", or be
// longer than MaxExecIDBytes. A bad id is a Validation error.
func ValidateExecID(id string) error {
	if plainExecID(id) {
		return nil
	}
	return execIDProblem(id)
}

// execIDProblem is ValidateExecID without its fast path.
func execIDProblem(id string) error {
	const op = "checkpoint"
	switch {
	case strings.TrimSpace(id) == "":
		return fault.New(fault.Validation, op, "exec id is required")
	case id == "." || id == "..":
		return fault.New(fault.Validation, op, "exec id %q is not allowed", id)
	case strings.ContainsAny(id, `/\`):
		return fault.New(fault.Validation, op, "exec id %q must not contain '/' or '\\'", id)
	case len(id) > MaxExecIDBytes:
		return fault.New(fault.Validation, op, "exec id %.20q... is %d bytes, over %d", id, len(id), MaxExecIDBytes)
	}
	for _, r := range id {
		if r < 0x20 || r == 0x7f {
			return fault.New(fault.Validation, op, "exec id %q must not contain control characters", id)
		}
	}
	return nil
}

// plainExecID reports, in one pass over the bytes, whether id is an
// exec id of printable ASCII without spaces that ValidateExecID accepts:
// the common case, which then skips the checks that name the problem.
func plainExecID(id string) bool {
	if id == "" || len(id) > MaxExecIDBytes || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f || c == '/' || c == '\\' {
			return false
		}
	}
	return true
}

// Encode validates cp and returns its JSON record, the format every store
// of this package writes: exactly the bytes json.Marshal(cp) returns. The
// record is written without reflection when the board's variables are
// JSON-native (nil, bools, numbers, strings, json.RawMessage, maps of
// string keys and slices of these, and a few typed maps and slices), and by
// json.Marshal otherwise.
// A checkpoint that fails Validate, has a bad exec id or holds values JSON
// cannot encode is a Validation error.
func Encode(cp agent.Checkpoint) ([]byte, error) {
	return encode(&cp, false)
}

// encode is Encode; measure says that the record does not fit in the stack
// buffers of encodeRecord (the caller has tried them), so it is measured
// at once.
func encode(cp *agent.Checkpoint, measure bool) ([]byte, error) {
	plain := plainCheckpoint(cp)
	if !plain {
		if err := validate(cp); err != nil {
			return nil, err
		}
	}
	if data, ok := encodeRecord(cp, measure); ok {
		return data, nil
	}
	if plain { // the payload was not checked: Validate names the problem
		if err := validate(cp); err != nil {
			return nil, err
		}
	}
	data, err := json.Marshal(*cp) // a copy: cp itself must not escape
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, "checkpoint", "%s: not JSON-encodable", cp.ExecID)
	}
	return data, nil
}

// validate runs the full checks of ValidateExecID and Validate.
func validate(cp *agent.Checkpoint) error {
	if err := ValidateExecID(cp.ExecID); err != nil {
		return err
	}
	return cp.Validate()
}

// appendPlain appends the record of cp to dst, which it does not grow
// beyond its capacity, when cp is in the common shape (plainCheckpoint) and
// its record is written without json.Marshal; otherwise it reports false,
// and encode, the general path, writes the record or names the problem.
func appendPlain(dst []byte, cp *agent.Checkpoint) ([]byte, bool) {
	if !plainCheckpoint(cp) {
		return dst, false
	}
	return appendRecord(dst, cp, cap(dst))
}

// plainCheckpoint reports, without building an error, whether cp passes
// both ValidateExecID and Validate as long as its payload, if any, is valid
// JSON: it is in the common shape of a plain exec id (see plainExecID,
// which also makes it non-blank), a board and an iteration that is not
// negative. The payload is checked by appendRecord, which gives up on
// invalid JSON, so a record written without json.Marshal from a plain
// checkpoint is valid. Anything else takes the full checks, which name the
// problem. A rule added to Checkpoint.Validate must be added here too
// (TestPlainCheckpoint).
func plainCheckpoint(cp *agent.Checkpoint) bool {
	return cp.Board != nil && cp.Iteration >= 0 && plainExecID(cp.ExecID)
}

// Decode reads a record written by Encode. Unknown fields are ignored, so
// that records of a newer version stay readable; anything else that is
// wrong (invalid JSON, trailing data, a failed Validate, a bad exec id) is a
// *CorruptError. Numbers in the board come back as float64.
func Decode(data []byte) (*agent.Checkpoint, error) {
	cp, reason := decode(data)
	if reason != "" {
		return nil, &CorruptError{Reason: reason}
	}
	return cp, nil
}

func decode(data []byte) (*agent.Checkpoint, string) {
	var cp agent.Checkpoint
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&cp); err != nil {
		return nil, "invalid JSON: " + err.Error()
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "invalid JSON: trailing data after the record"
	}
	if err := ValidateExecID(cp.ExecID); err != nil {
		return nil, err.Error()
	}
	if err := cp.Validate(); err != nil {
		return nil, err.Error()
	}
	return &cp, ""
}
