package message_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const goldenPath = "testdata/messages.golden.json"

// goldenCase is one entry of the golden file: a name and a message's wire
// form.
type goldenCase struct {
	Name    string          `json:"name"`
	Message message.Message `json:"message"`
}

// goldenMessages are the messages whose wire form the golden file pins.
func goldenMessages() []goldenCase {
	return []goldenCase{
		{"user text", message.NewTextMessage(message.RoleUser, "What is the weather in Lyon?")},
		{"system text", message.NewTextMessage(message.RoleSystem, "You are terse.")},
		{"empty text", message.NewTextMessage(message.RoleAssistant, "")},
		{"unicode and escapes", message.NewTextMessage(message.RoleUser, "tab\tquote\" <b>&</b> é 世界 🐄 \u2028")},
		{"assistant with tool calls", message.Message{
			Role: message.RoleAssistant,
			Name: "planner",
			Parts: []message.Part{
				message.TextPart("Looking it up."),
				message.ToolCallPart("call_1", "weather", `{"city":"Lyon","units":"metric"}`),
				message.ToolCallPart("call_2", "clock", ""),
			},
		}},
		{"tool results", message.Message{
			Role: message.RoleTool,
			Parts: []message.Part{
				message.ToolResultPart("call_1", `{"temp":21}`, false),
				message.ToolResultPart("call_2", "clock unavailable", true),
			},
		}},
		{"data parts", message.Message{
			Role:     message.RoleUser,
			Metadata: map[string]string{"source": "form", "form_id": "f-17"},
			Parts: []message.Part{
				message.DataPart(json.RawMessage(`{"answer":true,"items":[1,2.5,"x",null]}`), "application/json"),
				message.DataPart(json.RawMessage(`null`), ""),
				message.DataPart(json.RawMessage(`"just a string"`), "text/plain"),
			},
		}},
	}
}

// TestGoldenRoundTrip pins the wire form: each golden message marshals to
// exactly the bytes in the golden file, and each entry of the file decodes
// back to the message it came from.
func TestGoldenRoundTrip(t *testing.T) {
	t.Parallel()
	cases := goldenMessages()
	for _, c := range cases {
		require.NoError(t, c.Message.Validate(), c.Name)
	}
	got, err := json.MarshalIndent(cases, "", "  ")
	require.NoError(t, err)
	got = append(got, '\n')
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(goldenPath), 0o755))
		require.NoError(t, os.WriteFile(goldenPath, got, 0o644))
	}
	want, err := os.ReadFile(goldenPath)
	require.NoError(t, err, "run go test -update to create the golden file")
	assert.Equal(t, string(want), string(got), "the wire form changed; run go test -update if that is intended")

	var entries []struct {
		Name    string          `json:"name"`
		Message json.RawMessage `json:"message"`
	}
	require.NoError(t, json.Unmarshal(want, &entries))
	require.Len(t, entries, len(cases))
	for i, e := range entries {
		t.Run(e.Name, func(t *testing.T) {
			m, err := message.Decode(e.Message)
			require.NoError(t, err)
			assert.Equal(t, normalized(t, cases[i].Message), normalized(t, m))
			again, err := json.Marshal(m)
			require.NoError(t, err)
			var compact bytes.Buffer
			require.NoError(t, json.Compact(&compact, e.Message))
			assert.Equal(t, compact.String(), string(again))
		})
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	m, err := message.Decode([]byte(` {"role":"user","parts":[{"type":"text","text":"hi"}]} ` + "\n"))
	require.NoError(t, err)
	assert.Equal(t, message.NewTextMessage(message.RoleUser, "hi"), m)

	m, err = message.Decode([]byte(`{"role":"assistant","name":"a","metadata":{"k":"v"},"parts":[
		{"type":"tool_call","tool_call":{"id":"c1","name":"f","arguments":"{\"x\":1}"}},
		{"type":"data","data":{ "x" : [1, 2] },"mime_type":"application/json"}]}`))
	require.NoError(t, err)
	assert.Equal(t, "a", m.Name)
	assert.Equal(t, map[string]string{"k": "v"}, m.Metadata)
	assert.Equal(t, []message.ToolCall{{ID: "c1", Name: "f", Arguments: `{"x":1}`}}, m.ToolCalls())
	assert.JSONEq(t, `{"x":[1,2]}`, string(m.Parts[1].Data))
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"empty input", ``, "message: decode: no message in the input"},
		{"only whitespace", " \n\t", "message: decode: no message in the input"},
		{"not JSON", `hello`, "message: decode: invalid character"},
		{"truncated", `{"role":"user","parts":[`, "message: decode: unexpected EOF"},
		{"unknown top-level field", `{"role":"user","parts":[{"type":"text","text":"x"}],"extra":1}`,
			`message: decode: json: unknown field "extra"`},
		{"unknown part field", `{"role":"user","parts":[{"type":"text","text":"x","url":"u"}]}`,
			`message: decode: json: unknown field "url"`},
		{"unknown tool call field", `{"role":"assistant","parts":[{"type":"tool_call","tool_call":{"id":"c","name":"f","args":"{}"}}]}`,
			`message: decode: json: unknown field "args"`},
		{"unknown tool result field", `{"role":"tool","parts":[{"type":"tool_result","tool_result":{"tool_call_id":"c","content":"","error":true}}]}`,
			`message: decode: json: unknown field "error"`},
		{"wrong type", `{"role":1,"parts":[]}`, "message: decode: json: cannot unmarshal number"},
		{"array instead of object", `[]`, "message: decode: json: cannot unmarshal array"},
		{"trailing object", `{"role":"user","parts":[{"type":"text","text":"x"}]}{}`,
			"message: decode: trailing data after the message"},
		{"trailing garbage", `{"role":"user","parts":[{"type":"text","text":"x"}]} x`,
			"message: decode: trailing data after the message"},
		{"trailing close brace", `{"role":"user","parts":[{"type":"text","text":"x"}]}}`,
			"message: decode: trailing data after the message"},
		{"null", `null`, `message: role "" is not one of system, user, assistant, tool`},
		{"empty object", `{}`, `message: role "" is not one of system, user, assistant, tool`},
		{"no parts", `{"role":"user","parts":[]}`, "message: a message needs at least one part"},
		{"invalid part", `{"role":"user","parts":[{"type":"text","text":"x"},{"type":"tool_call","tool_call":{"id":"c","name":"f"}}]}`,
			"message: parts[1]: tool_call parts belong to assistant messages"},
		{"bad arguments", `{"role":"assistant","parts":[{"type":"tool_call","tool_call":{"id":"c","name":"f","arguments":"{nope"}}]}`,
			"message: parts[0].tool_call.arguments: not a JSON text"},
		{"mixed part", `{"role":"user","parts":[{"type":"data","data":1,"text":"x"}]}`,
			"message: parts[0].text: not allowed in a data part"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := message.Decode([]byte(tt.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), "error %q does not start with %q", err, tt.want)
			assert.Equal(t, message.Message{}, m, "a rejected message is the zero value")
		})
	}
}

func TestDecodeKeepsJSONErrorInChain(t *testing.T) {
	t.Parallel()
	_, err := message.Decode([]byte(`{"role":"user",`))
	var syn *json.SyntaxError
	_, err2 := message.Decode([]byte(`{"role":"user",]`))
	assert.ErrorIs(t, err, fault.Validation)
	require.ErrorAs(t, err2, &syn)
	_, err = message.Decode([]byte(`{"role":true}`))
	var typ *json.UnmarshalTypeError
	require.ErrorAs(t, err, &typ)
}

// normalized returns m as it comes back from a JSON round trip: data parts
// re-encoded the way json.Marshal writes them (compact, with <, > and &
// escaped) and empty metadata dropped.
func normalized(t testing.TB, m message.Message) message.Message {
	t.Helper()
	m = m.Clone()
	if len(m.Metadata) == 0 {
		m.Metadata = nil
	}
	for i, p := range m.Parts {
		if p.Data != nil {
			b, err := json.Marshal(p.Data)
			if err != nil {
				t.Fatalf("encode parts[%d].data: %v", i, err)
			}
			m.Parts[i].Data = b
		}
	}
	return m
}

// FuzzDecode checks that Decode never panics, that every error is a
// Validation error, that an accepted message is valid and survives a JSON
// round trip, and that Decode and Validate agree.
func FuzzDecode(f *testing.F) {
	for _, c := range goldenMessages() {
		b, err := json.Marshal(c.Message)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"role":"user","parts":[]}`,
		`{"role":"user","parts":[{"type":"text","text":"x"}]} {}`,
		`{"role":"user","parts":[{"type":"text","text":"x","extra":1}]}`,
		`{"role":"tool","parts":[{"type":"tool_call","tool_call":{"id":"c","name":"f"}}]}`,
		`{"role":"assistant","parts":[{"type":"tool_call","tool_call":{"id":"c","name":"f","arguments":"{\"a\" : [1, 2]}"}}]}`,
		`{"role":"user","metadata":{},"parts":[{"type":"data","data": { "a" : "<&>" } }]}`,
		`{"ROLE":"user","Parts":[{"TYPE":"text","text":"case"}]}`,
		"{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
		"{\"role\":\"user\",\"parts\":[{\"type\":\"data\",\"data\":\"\xff\"}]}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := message.Decode(in)
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("Decode error is not a Validation error: %v", err)
			}
			checkValidateAgrees(t, in, err)
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("Decode accepted a message that Validate rejects: %v", err)
		}
		wire, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("marshal an accepted message: %v", err)
		}
		again, err := message.Decode(wire)
		if err != nil {
			t.Fatalf("decode the re-encoded message %s: %v", wire, err)
		}
		if want := normalized(t, m); !assert.ObjectsAreEqual(want, again) {
			t.Fatalf("round trip changed the message:\nfirst  %#v\nsecond %#v", want, again)
		}
		wire2, err := json.Marshal(again)
		if err != nil || !bytes.Equal(wire, wire2) {
			t.Fatalf("the wire form is not stable: %s then %s (%v)", wire, wire2, err)
		}
	})
}

// checkValidateAgrees: when the input is strict JSON of exactly one message,
// Decode's error is exactly Validate's.
func checkValidateAgrees(t *testing.T, in []byte, decodeErr error) {
	t.Helper()
	var m message.Message
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if dec.Decode(&m) != nil {
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		return
	}
	verr := m.Validate()
	if verr == nil {
		t.Fatalf("Validate accepts what Decode rejects: %v", decodeErr)
	}
	if verr.Error() != decodeErr.Error() {
		t.Fatalf("Decode and Validate disagree: %q vs %q", decodeErr, verr)
	}
}
