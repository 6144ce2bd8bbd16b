package openai

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
)

// FuzzStreamAssembly feeds SSE bodies to the chunk assembler the way the
// driver does (every "data:" line but [DONE]) and checks that it never
// panics, that its errors are Internal, and that an accepted reply is a
// valid assistant message whose text and tool calls are exactly the
// deltas it passed on.
func FuzzStreamAssembly(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":5,"function":{"arguments":"{"}}]}}]}`))
	f.Add([]byte(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"a","function":{"name":"f"}},{"id":"b","function":{"name":"g","arguments":"[]"}}]}}]}`))
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\xff\"}}]}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var text strings.Builder
		var calls []message.ToolCall
		asm := newAssembler(func(d model.Delta) error {
			switch {
			case d.ToolCall != nil && d.Text == "":
				calls = append(calls, *d.ToolCall)
			case d.ToolCall == nil && d.Text != "":
				text.WriteString(d.Text)
			default:
				t.Fatalf("a delta must set exactly one field: %+v", d)
			}
			return nil
		})
		resp, err := assemble(asm, body)
		if err != nil {
			if !errors.Is(err, fault.Internal) {
				t.Fatalf("assembly error is not Internal: %v", err)
			}
			return
		}
		if resp.Message.Role != message.RoleAssistant {
			t.Fatalf("role %q", resp.Message.Role)
		}
		if err := resp.Message.Validate(); err != nil {
			t.Fatalf("an accepted reply is not a valid message: %v", err)
		}
		if resp.Message.Text() != text.String() {
			t.Fatalf("text %q, deltas %q", resp.Message.Text(), text.String())
		}
		if got := resp.Message.ToolCalls(); len(got) != len(calls) {
			t.Fatalf("%d calls in the reply, %d passed on", len(got), len(calls))
		}
		if (len(calls) > 0) != (resp.FinishReason == model.FinishToolCalls) {
			t.Fatalf("finish %q with %d calls", resp.FinishReason, len(calls))
		}
	})
}

// assemble runs the data lines of an SSE body through asm.
func assemble(asm *assembler, body []byte) (model.Response, error) {
	for _, line := range bytes.Split(body, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if string(data) == "[DONE]" {
			break
		}
		if err := asm.addLine(data); err != nil {
			return asm.partial(), err
		}
	}
	return asm.response()
}
