package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// FormatVersion is the version of the recording format this package
// writes and the newest it reads. A recording of a newer version is
// refused (Decode), since it may hold inputs this version cannot replay.
const FormatVersion = 1

// MaxLineBytes caps one line of a recording, its newline included: a
// model reply or a board write larger than this is refused by Decode, and
// Encode refuses to write it.
const MaxLineBytes = 16 << 20

// MaxRecordingBytes caps a whole recording: Decode stops reading and
// refuses a recording once it has read more than this (a file that never
// ends, a pipe, a device), and Encode refuses to write one.
const MaxRecordingBytes = 64 << 20

// The kinds of a recording's lines, in the order they appear.
const (
	KindHeader = "header" // the first line
	KindInput  = "input"  // one outside input of the run
	KindEvent  = "event"  // one event the run published
	KindBoard  = "board"  // the board writes of one node
	KindResult = "result" // the last line: the turn's outcome
)

// Recording is one recorded turn: what it ran (Header), every input it
// took from outside (Inputs), and what it did (Events, Boards, Result).
type Recording struct {
	Header Header
	Inputs []Input
	Events []Event
	Boards []BoardWrite
	Result *Outcome
}

// Header is a recording's first line.
type Header struct {
	Kind    string `json:"kind"`   // "header"
	Format  int    `json:"format"` // FormatVersion
	Corral  string `json:"corral"` // the version of the Corral that recorded it
	Agent   string `json:"agent"`
	Context string `json:"context"`
	RunID   string `json:"run_id"`
	// Seeds are what the run's randomness is seeded from: the run id's
	// digest, as the runtime's random source and the wasm runner's stream
	// derive it (informational: a replay reproduces them from RunID).
	Seeds   Seeds         `json:"seeds"`
	Request agent.Request `json:"request"`
	// Document is the deployment document as it was given to the recorder
	// ("" when it was not a file, as for the embedded demo).
	Document string `json:"document,omitempty"`
	// Digests are the SHA-256 digests of the deployment document and of
	// every file it references, graph documents, scripts and modules
	// included, by their path relative to the document's directory.
	Digests []Digest `json:"digests,omitempty"`
	// Parent names the recording this one was forked from (Fork).
	Parent *Parent `json:"parent,omitempty"`
	// Start is the state the turn started from, when it did not start
	// from an empty session: absent for a turn without history (format 1
	// recordings made before it existed read as such).
	Start *Start `json:"start,omitempty"`
	// Truncated marks a recording whose recorder stopped keeping the
	// turn's events and board writes at its per-turn bound
	// (RecorderConfig.MaxTurnBytes): it holds the turn's beginning only,
	// and a replay refuses it.
	Truncated bool `json:"truncated,omitempty"`
}

// Start is the state a turn started from: the session history the
// runtime gave it (a second turn of a session), or the checkpoint it
// resumed (a resumed turn). A replay starts from it rather than from an
// empty session.
type Start struct {
	History *agent.Board      `json:"history,omitempty"`
	Resume  *agent.Checkpoint `json:"resume,omitempty"`
}

// Seeds are the seeds of a run's random sources.
type Seeds struct {
	PCG [2]uint64 `json:"pcg"` // the host's random source (host.random, Math.random)
}

// Digest is one file's digest.
type Digest struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Parent names the recording a fork was made from and what it changed.
type Parent struct {
	RunID  string `json:"run_id"`
	SHA256 string `json:"sha256"` // the digest of the parent recording's file
	Input  int    `json:"input"`  // the input the fork substituted
}

// Input is one outside input of the run: a non-deterministic host call
// (now, random, askUser, drainSteer, checkInterrupt, delegate), a model
// reply with its stream chunks (func "inference") or a tool result (func
// "tool"), with what it answered. N numbers the inputs 1, 2, ... in the
// order they were taken; Node and Call say which node took it and how many
// inputs that node had taken before (from 1).
type Input struct {
	Kind   string             `json:"kind"` // "input"
	N      int                `json:"n"`
	Node   string             `json:"node"`
	Call   int                `json:"call"`
	Func   string             `json:"func"`
	Args   json.RawMessage    `json:"args"`
	Result json.RawMessage    `json:"result,omitempty"`
	Err    *hostabi.ErrorInfo `json:"error,omitempty"`
}

// Event is one event the run published: its subject and payload (its id
// and time are not compared), and the node it is about ("" for the run's
// own).
type Event struct {
	Kind    string          `json:"kind"` // "event"
	Node    string          `json:"node,omitempty"`
	Subject string          `json:"subject"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// BoardWrite is what the nodes of one wave wrote to the board: the vars
// they set (with their new values) or deleted and the messages they
// appended to each channel.
type BoardWrite struct {
	Kind      string                       `json:"kind"` // "board"
	Node      string                       `json:"node"` // the wave's nodes, comma separated
	Iteration int                          `json:"iteration"`
	Set       map[string]json.RawMessage   `json:"set,omitempty"`
	Deleted   []string                     `json:"deleted,omitempty"`
	Appended  map[string][]message.Message `json:"appended,omitempty"`
}

// Outcome is the turn's result.
type Outcome struct {
	Kind   string            `json:"kind"` // "result"
	Status agent.Status      `json:"status"`
	Output []message.Message `json:"output,omitempty"`
	State  json.RawMessage   `json:"state,omitempty"`
	Error  *OutcomeError     `json:"error,omitempty"`
}

// OutcomeError is a failed turn's error: its fault kind and message.
type OutcomeError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// Encode writes r, one JSON value per line: the header, the inputs, the
// events, the board writes and the result. What it writes Decode reads: a
// line over MaxLineBytes or a recording over MaxRecordingBytes is refused
// with a BudgetExceeded error naming the line, and nothing is written.
func (r *Recording) Encode(w io.Writer) error {
	data, err := r.encode()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fault.Wrap(fault.Internal, err, "encode recording", "")
	}
	return nil
}

// encode returns the encoded recording, or the BudgetExceeded error of
// the first line Decode would refuse.
func (r *Recording) encode() ([]byte, error) {
	h := r.Header
	h.Kind, h.Format = KindHeader, FormatVersion
	lines := []any{h}
	for _, in := range r.Inputs {
		in.Kind = KindInput
		lines = append(lines, in)
	}
	for _, ev := range r.Events {
		ev.Kind = KindEvent
		lines = append(lines, ev)
	}
	for _, b := range r.Boards {
		b.Kind = KindBoard
		lines = append(lines, b)
	}
	if r.Result != nil {
		out := *r.Result
		out.Kind = KindResult
		lines = append(lines, out)
	}
	var buf bytes.Buffer
	for i, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			return nil, fault.Wrap(fault.Internal, err, "encode recording", "line %d", i+1)
		}
		if len(b)+1 > MaxLineBytes {
			return nil, fault.New(fault.BudgetExceeded, "encode recording",
				"line %d (%s): %d bytes, over the %d a line may hold (MaxLineBytes)", i+1, lineWhat(l), len(b)+1, MaxLineBytes)
		}
		if buf.Len()+len(b)+1 > MaxRecordingBytes {
			return nil, fault.New(fault.BudgetExceeded, "encode recording",
				"line %d (%s): the recording grows over the %d bytes it may hold (MaxRecordingBytes)", i+1, lineWhat(l), MaxRecordingBytes)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// lineWhat names a line for an error: its kind, and its node or subject.
func lineWhat(l any) string {
	switch l := l.(type) {
	case Input:
		return fmt.Sprintf("input %d at node %s", l.N, Printable(clip(l.Node)))
	case Event:
		return "event " + Printable(clip(l.Subject))
	case BoardWrite:
		return "board write of node " + Printable(clip(l.Node))
	case Outcome:
		return "result"
	}
	return "header"
}

// Bytes returns the encoded recording, or the error Encode refuses it
// with.
func (r *Recording) Bytes() ([]byte, error) { return r.encode() }

// Decode reads a recording strictly: the header first, of a format
// version this package reads; then inputs numbered 1, 2, ...; then events,
// board writes and at most one result, last. Unknown fields, lines out of
// order, a line over MaxLineBytes and blank lines are Validation errors
// naming the line. A recording of a newer format version is refused with
// a Validation error that says so, and one longer than MaxRecordingBytes
// with a Validation error once Decode has read that much: it never reads
// further.
func Decode(rd io.Reader) (*Recording, error) {
	sc := bufio.NewScanner(&boundedReader{r: rd, left: MaxRecordingBytes})
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	rec := &Recording{}
	stage, line := 0, 0
	for sc.Scan() {
		line++
		if err := rec.decodeLine(sc.Bytes(), line, &stage); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "decode recording", "line %d", line+1)
	}
	if line == 0 {
		return nil, fault.New(fault.Validation, "decode recording", "empty: no header line")
	}
	return rec, nil
}

// errTooLong is what a boundedReader returns past its bound.
var errTooLong = fmt.Errorf("the recording holds more than %d bytes (MaxRecordingBytes)", MaxRecordingBytes)

// boundedReader reads at most left bytes of r, then fails with errTooLong.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a recording of exactly the bound from a longer one.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, errTooLong
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// DecodeFile decodes the recording in file, which must be a regular file
// (a device, a pipe or a directory is a Validation error, not read).
func DecodeFile(file string) (*Recording, error) {
	f, err := openRegular(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return rec, nil
}

// DecodeBytes is Decode of data.
func DecodeBytes(data []byte) (*Recording, error) { return Decode(bytes.NewReader(data)) }

var stageOf = map[string]int{KindHeader: 0, KindInput: 1, KindEvent: 2, KindBoard: 3, KindResult: 4}

func (rec *Recording) decodeLine(data []byte, line int, stage *int) error {
	bad := func(err error, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if err != nil {
			return fault.Wrap(fault.Validation, err, "decode recording", "line %d: %s", line, msg)
		}
		return fault.New(fault.Validation, "decode recording", "line %d: %s", line, msg)
	}
	var probe struct {
		Kind   string `json:"kind"`
		Format *int   `json:"format"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return bad(err, "not a JSON object")
	}
	st, ok := stageOf[probe.Kind]
	switch {
	case !ok:
		return bad(nil, "unknown kind %q", clip(probe.Kind))
	case line == 1 && probe.Kind != KindHeader:
		return bad(nil, "the first line must be the header, got %q", probe.Kind)
	case line > 1 && probe.Kind == KindHeader:
		return bad(nil, "a second header")
	case st < *stage:
		return bad(nil, "a %q line after the %s lines", probe.Kind, stageName(*stage))
	case *stage == 4:
		return bad(nil, "a line after the result")
	}
	if probe.Kind == KindHeader {
		if probe.Format == nil {
			return bad(nil, "the header has no format version")
		}
		if *probe.Format > FormatVersion {
			return bad(nil, "format version %d is newer than %d, the newest this Corral reads: replay it with a newer corral", *probe.Format, FormatVersion)
		}
		if *probe.Format < 1 {
			return bad(nil, "format version %d is not a version", *probe.Format)
		}
	}
	*stage = st
	var err error
	switch probe.Kind {
	case KindHeader:
		err = strict(data, &rec.Header)
		if err == nil && (rec.Header.RunID == "" || rec.Header.Agent == "" || rec.Header.Context == "") {
			return bad(nil, "the header needs run_id, agent and context")
		}
	case KindInput:
		var in Input
		if err = strict(data, &in); err == nil {
			err = checkInput(in, len(rec.Inputs)+1)
		}
		rec.Inputs = append(rec.Inputs, in)
	case KindEvent:
		var ev Event
		if err = strict(data, &ev); err == nil && ev.Subject == "" {
			err = fmt.Errorf("an event needs a subject")
		}
		rec.Events = append(rec.Events, ev)
	case KindBoard:
		var b BoardWrite
		err = strict(data, &b)
		rec.Boards = append(rec.Boards, b)
	case KindResult:
		var o Outcome
		err = strict(data, &o)
		rec.Result = &o
	}
	if err != nil {
		return bad(err, "a %s line", probe.Kind)
	}
	return nil
}

func stageName(st int) string {
	for k, v := range stageOf {
		if v == st {
			return k
		}
	}
	return ""
}

func checkInput(in Input, n int) error {
	switch {
	case in.N != n:
		return fmt.Errorf("n %d, want %d", in.N, n)
	case in.Node == "" || in.Func == "":
		return fmt.Errorf("node and func are required")
	case in.Call < 1:
		return fmt.Errorf("call must be >= 1")
	case len(in.Args) == 0 || in.Args[0] != '[':
		return fmt.Errorf("args must be a JSON array")
	case (len(in.Result) > 0) == (in.Err != nil):
		return fmt.Errorf("exactly one of result and error is required")
	}
	return nil
}

// strict decodes data into v, refusing unknown fields and trailing data.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data")
	}
	return nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// entries returns the inputs as journal entries, numbered by N.
func (r *Recording) entries() []hostabi.Entry {
	out := make([]hostabi.Entry, len(r.Inputs))
	for i, in := range r.Inputs {
		out[i] = hostabi.Entry{Seq: in.N, Node: in.Node, Func: in.Func, Args: in.Args, Result: in.Result, Err: in.Err}
	}
	return out
}

// inputsOf numbers journal entries as a recording's inputs.
func inputsOf(entries []hostabi.Entry) []Input {
	out := make([]Input, len(entries))
	calls := map[string]int{}
	for i, e := range entries {
		calls[e.Node]++
		out[i] = Input{Kind: KindInput, N: i + 1, Node: e.Node, Call: calls[e.Node], Func: e.Func,
			Args: e.Args, Result: e.Result, Err: e.Err}
	}
	return out
}
