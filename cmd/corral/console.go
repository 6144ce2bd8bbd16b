package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// console writes a turn to the terminal: the stream on out, prompts and
// notices on errw. It is safe for concurrent use: the stream sink and the
// input loop both write to it.
type console struct {
	mu      sync.Mutex
	out     io.Writer
	errw    io.Writer
	quiet   bool // --json: the stream is not printed
	echo    bool // answers are shown after their prompt
	asking  bool // a prompt on errw waits for its line's end
	midLine bool // the last byte written to out was not a newline
	printed bool // some of the stream was printed
}

// streamPart prints one streamed part: text as it is, tool calls and
// results on lines of their own.
func (c *console) streamPart(p message.Part) {
	if c.quiet {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch p.Type {
	case message.PartText:
		c.writeOutLocked(p.Text)
	case message.PartToolCall:
		if p.ToolCall != nil {
			c.lineLocked(fmt.Sprintf("[tool call %s %s]", p.ToolCall.Name, p.ToolCall.Arguments))
		}
	case message.PartToolResult:
		if p.ToolResult != nil {
			c.lineLocked(fmt.Sprintf("[tool result %s]", p.ToolResult.Content))
		}
	}
}

func (c *console) lineLocked(s string) {
	if c.midLine {
		c.writeOutLocked("\n")
	}
	c.writeOutLocked(s + "\n")
}

func (c *console) writeOutLocked(s string) {
	if s == "" {
		return
	}
	_, _ = io.WriteString(c.out, s)
	c.midLine = !strings.HasSuffix(s, "\n")
	c.printed = true
}

// result prints the text of a turn's output when none of it was streamed.
func (c *console) result(output []message.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.printed || c.quiet {
		return
	}
	for _, m := range output {
		if t := m.Text(); t != "" {
			c.lineLocked(t)
		}
	}
}

// notice prints a line on errw, first ending a line the stream left open.
func (c *console) notice(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.breakLineLocked()
	fmt.Fprintf(c.errw, format+"\n", args...)
}

// ask shows a prompt on errw and leaves the cursor after it.
func (c *console) ask(text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.breakLineLocked()
	fmt.Fprintf(c.errw, "? %s ", strings.TrimSpace(text))
	c.asking = true
}

// answered ends a prompt's line, showing the answer when the input does
// not echo it.
func (c *console) answered(text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.echo && c.asking {
		fmt.Fprintln(c.errw, text)
	}
	c.asking = false
}

// noInput ends a prompt's line that gets an empty answer because stdin
// has ended.
func (c *console) noInput() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.asking {
		fmt.Fprint(c.errw, "? ")
	}
	fmt.Fprintln(c.errw, "(end of input: no answer)")
	c.asking = false
}

// breakLineLocked ends the line the stream or a prompt left open.
func (c *console) breakLineLocked() {
	if c.midLine {
		_, _ = io.WriteString(c.out, "\n")
		c.midLine = false
	}
	if c.asking {
		_, _ = io.WriteString(c.errw, "\n")
		c.asking = false
	}
}

// promptEvent is a prompt the turn asked or resolved.
type promptEvent struct {
	id       string
	text     string // the question, for a request
	resolved bool
}

// streamSink is the turn's sink: it prints the parts of stream deltas and
// hands prompt events to the input loop on events. It stops handing them
// over when stop is closed.
func streamSink(c *console, events chan<- promptEvent, stop <-chan struct{}) agent.StreamSink {
	return agent.StreamSinkFunc(func(ctx context.Context, env event.Envelope, d event.StreamDeltaPayload) error {
		if d.Type == event.DeltaPart && d.Part != nil {
			c.streamPart(*d.Part)
			return nil
		}
		ev, ok := decodePrompt(env)
		if !ok {
			return nil
		}
		select {
		case events <- ev:
		case <-stop:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	})
}

// decodePrompt reads a prompt request or resolution from env.
func decodePrompt(env event.Envelope) (promptEvent, bool) {
	run := env.Header(event.HeaderRunID)
	switch env.Subject {
	case event.SubjectPromptRequested(run):
		var p session.PromptRequested
		if env.Decode(&p) != nil || p.PromptID == "" {
			return promptEvent{}, false
		}
		return promptEvent{id: p.PromptID, text: message.Message{Parts: p.Prompt.Parts}.Text()}, true
	case event.SubjectPromptResolved(run):
		var p session.PromptResolved
		if env.Decode(&p) != nil || p.PromptID == "" {
			return promptEvent{}, false
		}
		return promptEvent{id: p.PromptID, resolved: true}, true
	}
	return promptEvent{}, false
}

// jsonResult is what --json prints.
type jsonResult struct {
	Status string            `json:"status"`
	RunID  string            `json:"run_id"`
	Output []message.Message `json:"output"`
	State  map[string]any    `json:"state"`
	Usage  jsonUsage         `json:"usage"`
	Error  *jsonError        `json:"error"`
}

// jsonUsage is the turn's token usage, named as the OpenAI wire names it.
type jsonUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

type jsonError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// newJSONResult describes an outcome for --json.
func newJSONResult(o outcome) jsonResult {
	r := jsonResult{Status: string(o.status), RunID: o.runID, Output: o.output, State: o.state,
		Usage: jsonUsage{PromptTokens: o.usage.InputTokens, CompletionTokens: o.usage.OutputTokens, TotalTokens: o.usage.TotalTokens}}
	if r.Output == nil {
		r.Output = []message.Message{}
	}
	if r.State == nil {
		r.State = map[string]any{}
	}
	if o.err != nil {
		r.Error = &jsonError{Kind: o.kind, Message: o.err.Error()}
	}
	return r
}

// writeJSON prints r as one line of JSON.
func writeJSON(w io.Writer, r jsonResult) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// statusLine is the line printed after the stream: the status, the run
// id and, when the turn's model calls reported any, the tokens they used.
func statusLine(o outcome) string {
	s := fmt.Sprintf("-- %s (%s)", o.status, o.runID)
	if u := o.usage; u != (agent.Usage{}) {
		s = fmt.Sprintf("-- %s (%s; tokens: %d prompt + %d completion = %d)", o.status, o.runID,
			u.InputTokens, u.OutputTokens, u.TotalTokens)
	}
	if o.err != nil {
		s += fmt.Sprintf(": %s: %v", o.kind, o.err)
	}
	return s
}
