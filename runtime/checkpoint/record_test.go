package checkpoint

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type opaque struct{ N int }

// recordCases change the full checkpoint of checkpointtest in one way
// each. native says whether the record is written without json.Marshal.
var recordCases = []struct {
	name   string
	native bool
	change func(cp *agent.Checkpoint)
}{
	{"every field set", true, func(*agent.Checkpoint) {}},
	{"only required fields", true, func(cp *agent.Checkpoint) {
		*cp = agent.Checkpoint{ExecID: "r", Board: agent.NewBoard()}
	}},
	{"empty steps and attributes are omitted", true, func(cp *agent.Checkpoint) {
		cp.Steps, cp.Attributes, cp.Payload = []string{}, map[string]string{}, json.RawMessage{}
	}},
	{"escaped strings everywhere", true, func(cp *agent.Checkpoint) {
		cp.ExecID, cp.SpecVersion = "<run>&\u2028é", "v\"1\"\t"
		cp.Steps = []string{"a<b", "bad\xff"}
		cp.Attributes = map[string]string{"z": "&", "<a>": "\u2029", "": ""}
		cp.Board.Append("<ch>", message.Message{Role: "us\"er", Name: "n<", Metadata: map[string]string{"b": "1", "a": "<"},
			Parts: []message.Part{{Type: "te<xt", Text: "x\x00y\u2028", MimeType: "&"}}})
	}},
	{"payload compacted and escaped", true, func(cp *agent.Checkpoint) {
		cp.Payload = json.RawMessage(" {\n \"a\" : [ 1 , \"<&>\" ] , \"b\" : \"\u2028\\\"\" }\n")
	}},
	{"board without vars and channels", true, func(cp *agent.Checkpoint) { cp.Board = &agent.Board{} }},
	{"nil and empty channels", true, func(cp *agent.Checkpoint) {
		cp.Board.Channels = map[string][]message.Message{"nil": nil, "empty": {}, "b": {{Role: message.RoleUser}}}
	}},
	{"message shapes", true, func(cp *agent.Checkpoint) {
		cp.Board.Append("x",
			message.Message{Role: message.RoleUser, Parts: []message.Part{}, Metadata: map[string]string{}},
			message.Message{Role: message.RoleAssistant, Parts: []message.Part{
				message.ToolCallPart("", "", ""), {Type: message.PartData, Data: json.RawMessage{}},
				{Type: "all", Text: "t", Data: json.RawMessage(` [ 1 ] `), MimeType: "m",
					ToolCall:   &message.ToolCall{ID: "i", Name: "n", Arguments: "{}"},
					ToolResult: &message.ToolResult{ToolCallID: "c", Content: "<c>", IsError: true}},
			}},
			message.Message{Role: message.RoleTool, Parts: []message.Part{message.ToolResultPart("c", "", false)}})
	}},
	{"board of every native value", true, func(cp *agent.Checkpoint) {
		cp.Board.Vars = map[string]any{"f": 1e21, "tiny": -1e-7, "neg0": math.Copysign(0, -1), "i": 3, "i64": int64(-4),
			"n": json.Number("1.5e3"), "raw": json.RawMessage(` {"a" : "<"} `), "ss": []string{"a"},
			"sm": map[string]string{"k": "v"}, "ms": []map[string]any{{"a": nil}}, "deep": []any{[]any{map[string]any{}}},
			"<key>": "\xff"}
	}},
	{"time zones", true, func(cp *agent.Checkpoint) {
		cp.Timestamp = time.Date(2025, 1, 2, 3, 4, 5, 600, time.FixedZone("", 5*3600+30*60))
		cp.OriginalStartedAt = time.Date(1999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -(8*3600+17)))
	}},
	{"zero timestamp", true, func(cp *agent.Checkpoint) { cp.Timestamp = time.Time{} }},
	{"year 0 and 9999", true, func(cp *agent.Checkpoint) {
		cp.Timestamp = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
		cp.OriginalStartedAt = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	}},
	{"monotonic clock reading is dropped", true, func(cp *agent.Checkpoint) {
		cp.Timestamp, cp.OriginalStartedAt = time.Now(), time.Now().UTC()
	}},
	{"fractions without trailing zeros", true, func(cp *agent.Checkpoint) {
		cp.Timestamp = time.Date(2025, 12, 31, 23, 59, 59, 120000000, time.UTC)
		cp.OriginalStartedAt = time.Date(1970, 1, 1, 0, 0, 0, 1, time.UTC)
	}},
	{"before 1970 and in leap years", true, func(cp *agent.Checkpoint) {
		cp.Timestamp = time.Date(1600, 2, 29, 1, 2, 3, 400, time.UTC)
		cp.OriginalStartedAt = time.Date(12, 3, 4, 5, 6, 7, 8, time.UTC)
	}},
	{"leap days, month ends and year ends", true, func(cp *agent.Checkpoint) {
		cp.Timestamp = time.Date(2024, 2, 29, 23, 59, 59, 999999999, time.UTC)
		cp.OriginalStartedAt = time.Date(2023, 12, 31, 23, 59, 59, 0, time.UTC)
	}},
	{"century years", true, func(cp *agent.Checkpoint) {
		cp.Timestamp = time.Date(1900, 3, 1, 0, 0, 0, 1000, time.UTC)
		cp.OriginalStartedAt = time.Date(2000, 2, 29, 12, 0, 0, 500000000, time.UTC)
	}},
	{"one-entry maps with escaped keys", true, func(cp *agent.Checkpoint) {
		cp.Payload = nil
		cp.Attributes = map[string]string{"<a>\"\u2028": "&\x00"}
		cp.Board.Vars = map[string]any{"\xff<": map[string]any{"\n": map[string]string{"&": "\t"}}}
		cp.Board.Channels = map[string][]message.Message{"<ch>\u2029": {{Role: message.RoleUser,
			Metadata: map[string]string{"\"k\"": "<v>"}, Parts: []message.Part{message.TextPart("hi")}}}}
	}},
	{"zero offset zone that is not UTC", true, func(cp *agent.Checkpoint) {
		cp.Timestamp = time.Date(2025, 1, 2, 3, 4, 5, 6, time.FixedZone("GMT", 0))
	}},
	{"large iteration", true, func(cp *agent.Checkpoint) { cp.Iteration = math.MaxInt }},
	{"record of a few KiB", true, func(cp *agent.Checkpoint) {
		for i := range 40 {
			cp.Board.Vars[fmt.Sprint("v", i)] = map[string]any{"text": strings.Repeat("<x>", i), "n": float64(i)}
		}
	}},
	{"record over 8 KiB, one long string", true, func(cp *agent.Checkpoint) {
		cp.Board.Vars["long"] = strings.Repeat("a&b ", 5000)
	}},
	{"record over 8 KiB, many messages", true, func(cp *agent.Checkpoint) {
		for i := range 300 {
			cp.Board.Append("history", message.NewTextMessage(message.RoleUser, fmt.Sprint("message <", i, ">")))
		}
	}},
	{"struct in a large board falls back", false, func(cp *agent.Checkpoint) {
		cp.Board.Vars["long"] = strings.Repeat("x", 10000)
		cp.Board.Vars["o"] = opaque{1}
	}},
	{"struct in the board falls back", false, func(cp *agent.Checkpoint) { cp.Board.Vars["o"] = opaque{1} }},
	{"message in the board falls back", false, func(cp *agent.Checkpoint) {
		cp.Board.Vars["m"] = message.NewTextMessage(message.RoleUser, "<hi>")
	}},
	{"named map type falls back", false, func(cp *agent.Checkpoint) {
		cp.Board.Vars["m"] = map[string]int{"a": 1}
	}},
	// These fail in json.Marshal, so Encode must fail.
	{"NaN in the board", false, func(cp *agent.Checkpoint) { cp.Board.Vars["nan"] = math.NaN() }},
	{"invalid json.Number", false, func(cp *agent.Checkpoint) { cp.Board.Vars["n"] = json.Number("1x") }},
	{"invalid raw value in the board", false, func(cp *agent.Checkpoint) { cp.Board.Vars["r"] = json.RawMessage(`{`) }},
	{"invalid part data", false, func(cp *agent.Checkpoint) {
		cp.Board.Append("x", message.Message{Role: message.RoleUser, Parts: []message.Part{{Type: "data", Data: json.RawMessage(`nope`)}}})
	}},
	{"year 10000", false, func(cp *agent.Checkpoint) { cp.Timestamp = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
	{"year 10000 in UTC", false, func(cp *agent.Checkpoint) {
		cp.OriginalStartedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	}},
	{"year 10000 in a zone", false, func(cp *agent.Checkpoint) {
		cp.OriginalStartedAt = time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC).In(time.FixedZone("", 2*3600))
	}},
	{"negative year", false, func(cp *agent.Checkpoint) {
		cp.OriginalStartedAt = time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)
	}},
	{"zone offset of 24 hours", false, func(cp *agent.Checkpoint) {
		cp.Timestamp = time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))
	}},
	{"zone offset of 100 hours", false, func(cp *agent.Checkpoint) {
		cp.Timestamp = time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("", -100*3600))
	}},
}

// Encode writes exactly json.Marshal's bytes, or fails where it fails, as
// a Validation error; the native cases never reach json.Marshal.
func TestEncodeMatchesMarshal(t *testing.T) {
	t.Parallel()
	for _, tc := range recordCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cp := checkpointtest.NewCheckpoint("run-1", 3)
			tc.change(&cp)
			want, marshalErr := json.Marshal(cp)
			got, err := Encode(cp)
			if marshalErr != nil {
				require.Error(t, err)
				assert.True(t, fault.Is(err, fault.Validation), "%v", err)
				assert.Contains(t, err.Error(), cp.ExecID)
			} else {
				require.NoError(t, err)
				assert.True(t, bytes.Equal(want, got), "got  %s\nwant %s", got, want)
			}
			fast, ok := appendRecord(nil, &cp, math.MaxInt)
			assert.Equal(t, tc.native, ok, "written without json.Marshal")
			size, sized := recordSize(&cp)
			assert.Equal(t, ok, sized, "recordSize agrees")
			if ok {
				assert.Equal(t, string(want), string(fast))
				assert.Equal(t, int64(len(want)), size)
				_, fits := appendRecord(nil, &cp, len(want)-1)
				assert.False(t, fits, "a record longer than the limit gives up")
			}
		})
	}
}

// TestRecordKnowsEveryField pins the fields appendRecord writes: a field
// added to one of these structs (or a changed tag) must be added to
// record.go too, or the record would lose it.
func TestRecordKnowsEveryField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		tags []string
	}{
		{agent.Checkpoint{}, []string{"exec_id", "steps,omitempty", "iteration", "board", "payload,omitempty",
			"attributes,omitempty", "timestamp", "original_started_at,omitzero", "spec_version,omitempty",
			"-"}}, // Changes: never part of a record
		{agent.Board{}, []string{"vars", "channels"}},
		{message.Message{}, []string{"role", "parts", "name,omitempty", "metadata,omitempty"}},
		{message.Part{}, []string{"type", "text,omitempty", "data,omitempty", "mime_type,omitempty",
			"tool_call,omitempty", "tool_result,omitempty"}},
		{message.ToolCall{}, []string{"id", "name", "arguments,omitempty"}},
		{message.ToolResult{}, []string{"tool_call_id", "content", "is_error,omitempty"}},
	} {
		typ := reflect.TypeOf(tc.v)
		var tags []string
		for f := range typ.Fields() {
			tags = append(tags, f.Tag.Get("json"))
		}
		assert.Equal(t, tc.tags, tags, "%s", typ)
		for _, own := range []reflect.Type{typ, reflect.PointerTo(typ)} {
			assert.False(t, own.Implements(reflect.TypeFor[json.Marshaler]()), "%s has its own MarshalJSON", own)
			assert.False(t, own.Implements(reflect.TypeFor[encoding.TextMarshaler]()), "%s has its own MarshalText", own)
		}
	}
}

// FuzzPlainExecID: the fast path of ValidateExecID accepts only ids the
// full checks accept.
func FuzzPlainExecID(f *testing.F) {
	for _, id := range []string{"run-1", ".", "..", "a/b", `a\b`, " ", "a b", "\x7f", "é", "...", ""} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if plainExecID(id) && execIDProblem(id) != nil {
			t.Fatalf("fast path accepts %q: %v", id, execIDProblem(id))
		}
	})
}

// plainCheckpoint, the fast path of Encode's validation, accepts only
// checkpoints that pass ValidateExecID and Validate, given a valid
// payload, and the common shape.
func TestPlainCheckpoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(cp *agent.Checkpoint)
		plain  bool
	}{
		{"no payload", func(cp *agent.Checkpoint) { cp.Payload = nil }, true},
		{"empty payload", func(cp *agent.Checkpoint) { cp.Payload = json.RawMessage{} }, true},
		{"payload", func(*agent.Checkpoint) {}, true},
		{"no board", func(cp *agent.Checkpoint) { cp.Board = nil }, false},
		{"negative iteration", func(cp *agent.Checkpoint) { cp.Iteration = -1 }, false},
		{"blank exec id", func(cp *agent.Checkpoint) { cp.ExecID = " " }, false},
		{"empty exec id", func(cp *agent.Checkpoint) { cp.ExecID = "" }, false},
		{"exec id with a space", func(cp *agent.Checkpoint) { cp.ExecID = "a b" }, false},
		{"exec id with a slash", func(cp *agent.Checkpoint) { cp.ExecID = "a/b" }, false},
		{"exec id ..", func(cp *agent.Checkpoint) { cp.ExecID = ".." }, false},
	} {
		cp := checkpointtest.NewCheckpoint("run-1", 1)
		tc.change(&cp)
		assert.Equal(t, tc.plain, plainCheckpoint(&cp), tc.name)
		if plainCheckpoint(&cp) {
			assert.NoError(t, ValidateExecID(cp.ExecID), tc.name)
			assert.NoError(t, cp.Validate(), tc.name)
		}
	}
}

// A plain checkpoint whose payload is not JSON fails with Validate's own
// error, in Encode and in the memory store, though its checks were skipped
// at first; and nothing is stored.
func TestPlainCheckpointWithBadPayload(t *testing.T) {
	t.Parallel()
	cp := checkpointtest.NewCheckpoint("run-1", 1)
	cp.Payload = json.RawMessage(`{"a":`)
	require.True(t, plainCheckpoint(&cp))
	want := cp.Validate()
	require.Error(t, want)
	_, err := Encode(cp)
	require.Error(t, err)
	assert.Equal(t, want.Error(), err.Error())
	assert.True(t, fault.Is(err, fault.Validation))
	m := NewMemory()
	err = m.Save(context.Background(), cp)
	require.Error(t, err)
	assert.Equal(t, "save checkpoint: "+want.Error(), err.Error())
	ids, err := m.List(context.Background())
	require.NoError(t, err)
	assert.Empty(t, ids)
}
