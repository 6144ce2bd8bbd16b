package scripted_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-rt/corral/engine/scripted"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
)

// FuzzParse checks that the settings decoder never panics, that its errors
// are Validation errors, and that a provider built from accepted settings
// answers with valid assistant messages whose streamed deltas add up to
// the reply.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"replies":[{"text":"hi"}]}`,
		`{"replies":[{"match":"w","tool_calls":[{"name":"f","arguments":{"q":"{{input}}"}}]},{"on":"tool","text":"{{input}}"}],"fallback":{"text":"?"}}`,
		`{"replies":[{"regex":"(?i)x+","text":"abc","chunks":2,"usage":{"input":1,"output":2}}],"loop":true}`,
		`{"replies":[{"text":"a","error":{"kind":"timeout"}}]}`,
		`{"replies":[{"tool_calls":[{"name":"f","arguments":"{\"a\":1}"}],"finish":"tool_calls"}]}`,
		`{}`, `null`, `[]`, `{"replies":[{}]}`,
	} {
		f.Add([]byte(s), "weather?")
	}
	f.Fuzz(func(t *testing.T, raw []byte, input string) {
		s, err := scripted.Parse(raw)
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("not a Validation error: %v", err)
			}
			return
		}
		p, err := scripted.New(s)
		if err != nil {
			t.Fatalf("Parse accepted settings that New refuses: %v", err)
		}
		last := message.NewTextMessage(message.RoleUser, strings.ToValidUTF8(input, "?"))
		var text strings.Builder
		var calls []message.ToolCall
		resp, err := p.Generate(context.Background(), model.Request{Messages: []message.Message{last}}, func(d model.Delta) error {
			if d.ToolCall != nil {
				calls = append(calls, *d.ToolCall)
			}
			text.WriteString(d.Text)
			return nil
		})
		if err != nil {
			if fault.KindOf(err) == nil {
				t.Fatalf("an error without a kind: %v", err)
			}
			return
		}
		if err := resp.Message.Validate(); err != nil {
			b, _ := json.Marshal(resp.Message)
			t.Fatalf("invalid reply %s: %v", b, err)
		}
		if resp.Message.Text() != text.String() || len(resp.Message.ToolCalls()) != len(calls) {
			t.Fatalf("the deltas do not add up to the reply")
		}
	})
}
