package proc

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/corral-rt/corral/sandbox"
)

// The frames of every call — invoke, eval and result — are not JSON but
// their fields one after another in a fixed order: an integer as a
// varint, a string as its length (a uvarint) and its bytes, and a value of
// any shape (a board's vars, a config, a write's value, an error) as the
// length and bytes of its JSON, a length of 0 for none. A small call's
// frames were mostly what encoding/json spent on its fields by reflection;
// the values keep their JSON, and decode as they always did. The decoder
// never reads past the payload, allocates no more than the payload holds
// (a count is refused when the bytes left cannot hold that many items), and
// refuses a payload with bytes left over; the values then go through
// encoding/json and the message's check as before (FuzzFrame).

// binaryMsg is a message written field by field rather than as JSON.
type binaryMsg interface {
	appendTo(e *enc) error
}

// binaryDecoder is a message read field by field; decodeFrom reads all of
// p (check runs after it).
type binaryDecoder interface {
	decodeFrom(d *dec)
}

// errTrailing is a payload longer than its fields.
var errTrailing = errors.New("bytes after the last field")

// enc appends fields to b.
type enc struct{ b []byte }

func (e *enc) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) str(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *enc) raw(p []byte) {
	e.uint(uint64(len(p)))
	e.b = append(e.b, p...)
}

func (e *enc) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// json writes v as JSON; a nil v (absent) is written as no bytes, as
// encoding/json's omitempty leaves it out.
func (e *enc) json(v any) error {
	if v == nil {
		e.uint(0)
		return nil
	}
	at := len(e.b)
	e.b = append(e.b, 0, 0, 0, 0, 0) // room for the length, as a uvarint of up to 5 bytes
	if b, ok := appendJSON(e.b, v, 0); ok && len(b)-at-5 < 1<<28 {
		n := len(b) - at - 5
		var hdr [binary.MaxVarintLen64]byte
		h := binary.PutUvarint(hdr[:], uint64(n))
		copy(b[at+h:], b[at+5:])
		copy(b[at:], hdr[:h])
		e.b = b[:at+h+n]
		return nil
	}
	e.b = e.b[:at]
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.raw(data)
	return nil
}

// maxFastDepth is how deep appendJSON goes before it leaves a value to
// encoding/json.
const maxFastDepth = 32

// appendJSON appends v as encoding/json would encode it, for the shapes
// board values and configs mostly have — nil, booleans, finite numbers,
// strings of valid UTF-8, map[string]any and []any of those — and reports
// false for anything else, which encoding/json then encodes.
func appendJSON(b []byte, v any, depth int) ([]byte, bool) {
	if depth > maxFastDepth {
		return b, false
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, v), true
	case string:
		return appendJSONString(b, v)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return b, false
		}
		return strconv.AppendFloat(b, v, 'g', -1, 64), true
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case map[string]any:
		b = append(b, '{')
		first := true
		for k, x := range v {
			if !first {
				b = append(b, ',')
			}
			first = false
			var ok bool
			if b, ok = appendJSONString(b, k); !ok {
				return b, false
			}
			b = append(b, ':')
			if b, ok = appendJSON(b, x, depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendJSON(b, x, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	return b, false
}

// appendJSONString appends s as a JSON string; it reports false for a
// string that is not valid UTF-8 (encoding/json replaces what is not).
func appendJSONString(b []byte, s string) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return b, false
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// dec reads fields from b; the first failure sticks, and every read
// after it returns a zero value.
type dec struct {
	b   []byte
	err error
	// budget, when not nil, is what the values of a result frame may cost
	// the parent (budget.go); nil for frames the parent sent.
	budget *budget
}

func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("truncated or malformed %s", what)
	}
}

// refuse sets d's error, unless it has one.
func (d *dec) refuse(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *dec) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// raw returns the next length-prefixed bytes, a slice of the payload.
func (d *dec) raw() []byte {
	n := d.uint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("string")
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) str() string { return string(d.raw()) }

func (d *dec) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) == 0 || d.b[0] > 1 {
		d.fail("flag")
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

// count reads the number of items that follow, each at least min bytes
// long, refusing a count the bytes left cannot hold.
func (d *dec) count(min int) int {
	n := d.uint()
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.fail("count")
		return 0
	}
	return int(n)
}

// json decodes the next value into v, a pointer; no bytes leave v as it is.
func (d *dec) json(v any) {
	p := d.raw()
	if d.err != nil || len(p) == 0 {
		return
	}
	if err := json.Unmarshal(p, v); err != nil {
		d.err = err
	}
}

// object decodes the next value, a JSON object or nothing, into *m
// (decoding into an interface builds the map without reflection).
func (d *dec) object(m *map[string]any) {
	p := d.raw()
	if d.err != nil || len(p) == 0 {
		return
	}
	var v any
	if err := json.Unmarshal(p, &v); err != nil {
		d.err = err
		return
	}
	switch v := v.(type) {
	case map[string]any:
		*m = v
	case nil:
	default:
		d.err = fmt.Errorf("a %T where an object belongs", v)
	}
}

// end fails when bytes are left.
func (d *dec) end() error {
	if d.err == nil && len(d.b) > 0 {
		d.err = errTrailing
	}
	return d.err
}

// mapOrNil is m, or nil when m is empty (omitempty).
func mapOrNil[M ~map[K]V, K comparable, V any](m M) any {
	if len(m) == 0 {
		return nil
	}
	return m
}

func (m *invokeMsg) appendTo(e *enc) error {
	e.uint(m.ID)
	e.str(m.Node)
	e.str(m.Type)
	e.str(m.Script.Name)
	e.str(m.Script.Source)
	e.raw(m.Script.Module)
	e.str(m.Script.Entry)
	if err := e.json(mapOrNil(m.Script.Config)); err != nil {
		return err
	}
	if err := e.json(mapOrNil(m.Config)); err != nil {
		return err
	}
	if err := e.json(mapOrNil(m.Board.Vars)); err != nil {
		return err
	}
	if err := e.json(mapOrNil(m.Board.Channels)); err != nil {
		return err
	}
	e.int(m.BoardBytes)
	e.bool(m.Parallel)
	e.bool(m.Same)
	if m.Same {
		return nil
	}
	e.bool(m.Functions != nil)
	e.uint(uint64(len(m.Functions)))
	for _, f := range m.Functions {
		e.str(f)
	}
	r := m.Run
	for _, s := range [...]string{r.RunID, r.TaskID, r.AgentID, r.ContextID, r.ParentRunID, r.Tenant} {
		e.str(s)
	}
	return e.limits(m.Limits)
}

// limits writes l as JSON, or nothing when it is zero (most calls).
func (e *enc) limits(l sandbox.Limits) error {
	if l == (sandbox.Limits{}) {
		e.uint(0)
		return nil
	}
	return e.json(&l)
}

func (m *invokeMsg) decodeFrom(d *dec) {
	m.ID = d.uint()
	m.Node = d.str()
	m.Type = d.str()
	m.Script.Name = d.str()
	m.Script.Source = d.str()
	if mod := d.raw(); len(mod) > 0 {
		m.Script.Module = append([]byte(nil), mod...)
	}
	m.Script.Entry = d.str()
	d.object(&m.Script.Config)
	d.object(&m.Config)
	d.object(&m.Board.Vars)
	d.json(&m.Board.Channels)
	m.BoardBytes = d.int()
	m.Parallel = d.bool()
	m.Same = d.bool()
	if m.Same {
		return
	}
	some := d.bool()
	n := d.count(1)
	if some {
		m.Functions = make([]string, 0, n)
	}
	for range n {
		m.Functions = append(m.Functions, d.str())
	}
	r := &m.Run
	for _, s := range [...]*string{&r.RunID, &r.TaskID, &r.AgentID, &r.ContextID, &r.ParentRunID, &r.Tenant} {
		*s = d.str()
	}
	d.json(&m.Limits)
}

func (m *evalMsg) appendTo(e *enc) error {
	e.uint(m.ID)
	e.str(m.Node)
	e.str(m.Expr)
	e.str(m.Tenant)
	if err := e.json(mapOrNil(m.Vars)); err != nil {
		return err
	}
	return e.limits(m.Limits)
}

func (m *evalMsg) decodeFrom(d *dec) {
	m.ID = d.uint()
	m.Node = d.str()
	m.Expr = d.str()
	m.Tenant = d.str()
	d.object(&m.Vars)
	d.json(&m.Limits)
}

func (m *resultMsg) appendTo(e *enc) error {
	e.uint(m.ID)
	e.int(m.CPUNs)
	e.uint(uint64(len(m.Writes)))
	for _, w := range m.Writes {
		e.uint(uint64(w.Op))
		e.str(w.Name)
		if err := e.json(w.Value); err != nil {
			return err
		}
		var msgs any
		if len(w.Messages) > 0 {
			msgs = w.Messages
		}
		if err := e.json(msgs); err != nil {
			return err
		}
	}
	if err := e.json(m.Value); err != nil {
		return err
	}
	var werr any
	if m.Err != nil {
		werr = m.Err
	}
	return e.json(werr)
}

// minWriteBytes is the least a write takes: its op, the lengths of its
// name, value and messages.
const minWriteBytes = 4

func (m *resultMsg) decodeFrom(d *dec) {
	m.ID = d.uint()
	m.CPUNs = d.int()
	if n := d.count(minWriteBytes); n > 0 {
		m.Writes = make([]writeMsg, n)
		for i := range m.Writes {
			w := &m.Writes[i]
			op := d.uint()
			if op > math.MaxUint8 {
				d.fail("write op")
			}
			w.Op = sandbox.WriteOp(op)
			w.Name = d.str()
			if n := d.value(&w.Value); d.budget != nil && n > d.budget.maxValue {
				d.refuse("%s %q: a value of %d bytes, past max_value_bytes %d", w.Op, w.Name, n, d.budget.maxValue)
			}
			d.value(&w.Messages)
		}
	}
	if n := d.value(&m.Value); d.budget != nil && n > d.budget.maxValue {
		d.refuse("a value of %d bytes, past max_value_bytes %d", n, d.budget.maxValue)
	}
	d.value(&m.Err)
}
