package openai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	goopenai "github.com/sashabaranov/go-openai"
)

// maxToolCalls bounds the tool calls of one reply.
const maxToolCalls = 128

// assembler builds a reply from Chat Completions chunks: text deltas are
// passed on as they arrive, tool-call deltas are gathered by index and
// passed on whole when the next call starts or the stream finishes, the
// finish reason and the usage (in the last chunk with
// stream_options.include_usage) are kept for the Response.
type assembler struct {
	onDelta func(model.Delta) error
	text    strings.Builder
	calls   []*partialCall
	sent    int // calls[:sent] were passed to onDelta
	finish  string
	usage   agent.Usage
	chunks  int
}

// partialCall is a tool call whose pieces are still arriving.
type partialCall struct {
	index    int
	id, name string
	args     strings.Builder
}

func newAssembler(onDelta func(model.Delta) error) *assembler {
	if onDelta == nil {
		onDelta = func(model.Delta) error { return nil }
	}
	return &assembler{onDelta: onDelta}
}

// addLine decodes one SSE data payload and adds it. A payload that is not
// a chunk is an Internal error quoting it.
func (a *assembler) addLine(line []byte) error {
	var chunk goopenai.ChatCompletionStreamResponse
	if err := json.Unmarshal(line, &chunk); err != nil {
		return fault.Wrap(fault.Internal, err, opGenerate, "malformed stream chunk %q", abbreviate(string(line), maxLineEcho))
	}
	return a.add(chunk)
}

// add adds one chunk. Only choice 0 is read; other choices are ignored.
func (a *assembler) add(chunk goopenai.ChatCompletionStreamResponse) error {
	a.chunks++
	if u := chunk.Usage; u != nil {
		a.usage = usageOf(*u)
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		if err := a.addDelta(ch.Delta); err != nil {
			return err
		}
		if ch.FinishReason != "" && ch.FinishReason != goopenai.FinishReasonNull {
			a.finish = string(ch.FinishReason)
		}
	}
	return nil
}

func (a *assembler) addDelta(d goopenai.ChatCompletionStreamChoiceDelta) error {
	if d.Content != "" {
		a.text.WriteString(d.Content)
		if err := a.onDelta(model.Delta{Text: d.Content}); err != nil {
			return err
		}
	}
	for _, tc := range d.ToolCalls {
		if err := a.addToolCall(tc); err != nil {
			return err
		}
	}
	return nil
}

// addToolCall adds a piece of a tool call. The piece names its call by
// index; a piece without an index continues the last call unless it
// brings another id. A piece for a new call finishes the calls before it.
func (a *assembler) addToolCall(tc goopenai.ToolCall) error {
	var pc *partialCall
	switch {
	case tc.Index != nil:
		pc = a.callAt(*tc.Index)
	case len(a.calls) > 0 && (tc.ID == "" || tc.ID == a.calls[len(a.calls)-1].id):
		pc = a.calls[len(a.calls)-1]
	default:
		next := 0
		if len(a.calls) > 0 {
			next = a.calls[len(a.calls)-1].index + 1
		}
		pc = a.callAt(next)
	}
	if pc == nil {
		return fault.New(fault.Internal, opGenerate, "malformed stream: tool call index %d is out of range", *tc.Index)
	}
	if pc != a.calls[len(a.calls)-1] {
		return fault.New(fault.Internal, opGenerate, "malformed stream: a piece of tool call %d arrived after call %d started",
			pc.index, a.calls[len(a.calls)-1].index)
	}
	if tc.ID != "" && pc.id == "" {
		pc.id = tc.ID
	}
	if tc.Function.Name != "" && pc.name == "" {
		pc.name = tc.Function.Name
	}
	pc.args.WriteString(tc.Function.Arguments)
	return a.flushCalls(len(a.calls) - 1)
}

// callAt returns the call of index i, starting it when it is new; nil for
// an index out of range.
func (a *assembler) callAt(i int) *partialCall {
	for _, c := range a.calls {
		if c.index == i {
			return c
		}
	}
	if i < 0 || i >= maxToolCalls || len(a.calls) >= maxToolCalls {
		return nil
	}
	c := &partialCall{index: i}
	a.calls = append(a.calls, c)
	return c
}

// flushCalls passes on the finished calls before calls[upto].
func (a *assembler) flushCalls(upto int) error {
	for a.sent < upto {
		call, err := a.calls[a.sent].finished()
		if err != nil {
			return err
		}
		a.sent++
		if err := a.onDelta(model.Delta{ToolCall: &call}); err != nil {
			return err
		}
	}
	return nil
}

// finished returns the call, checked: a name is required, an empty id
// becomes call_<index>, and the arguments must be a JSON text (empty
// arguments are "{}").
func (c *partialCall) finished() (message.ToolCall, error) {
	call := message.ToolCall{ID: c.id, Name: c.name, Arguments: strings.TrimSpace(c.args.String())}
	if call.ID == "" {
		call.ID = fmt.Sprintf("call_%d", c.index)
	}
	if call.Arguments == "" {
		call.Arguments = "{}"
	}
	switch {
	case call.Name == "":
		return call, fault.New(fault.Internal, opGenerate, "malformed reply: tool call %d has no name", c.index)
	case !json.Valid([]byte(call.Arguments)):
		return call, fault.New(fault.Internal, opGenerate, "malformed reply: tool call %d (%s): arguments are not JSON: %q",
			c.index, call.Name, abbreviate(call.Arguments, maxLineEcho))
	}
	return call, nil
}

// response finishes the reply: the remaining calls are passed on, and the
// message, finish reason and usage are returned.
func (a *assembler) response() (model.Response, error) {
	if err := a.flushCalls(len(a.calls)); err != nil {
		return a.partial(), err
	}
	resp := a.partial()
	resp.FinishReason = finishOf(a.finish, len(a.calls) > 0)
	return resp, nil
}

// partial returns what arrived so far: the text, the calls passed on, the
// usage.
func (a *assembler) partial() model.Response {
	calls := make([]message.ToolCall, 0, a.sent)
	for _, c := range a.calls[:a.sent] {
		call, _ := c.finished()
		calls = append(calls, call)
	}
	return model.Response{Message: assistantMessage(a.text.String(), calls), Usage: a.usage}
}

// assistantMessage builds the assistant message of a reply: a text part
// (kept even when empty if there are no calls, so that the message is
// valid) and one part per call.
func assistantMessage(text string, calls []message.ToolCall) message.Message {
	m := message.Message{Role: message.RoleAssistant}
	if text != "" || len(calls) == 0 {
		m.Parts = append(m.Parts, message.TextPart(text))
	}
	for _, c := range calls {
		m.Parts = append(m.Parts, message.ToolCallPart(c.ID, c.Name, c.Arguments))
	}
	return m
}

// finishOf maps the server's finish reason to a model.Finish constant. A
// reply with tool calls finishes with tool_calls whatever the server said
// (some servers say stop); a missing or unknown reason is stop.
func finishOf(reason string, hasCalls bool) string {
	known := []string{model.FinishStop, model.FinishLength, model.FinishContentFilter, model.FinishToolCalls}
	switch {
	case hasCalls:
		return model.FinishToolCalls
	case reason == model.FinishToolCalls || reason == string(goopenai.FinishReasonFunctionCall):
		return model.FinishStop // a tool_calls finish without calls
	case slices.Contains(known, reason):
		return reason
	}
	return model.FinishStop
}

func usageOf(u goopenai.Usage) agent.Usage {
	out := agent.Usage{InputTokens: int64(max(u.PromptTokens, 0)), OutputTokens: int64(max(u.CompletionTokens, 0)),
		TotalTokens: int64(max(u.TotalTokens, 0))}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	return out
}
