package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	interrupted = agent.Interrupted(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "interrupt signal"})
	reply       = []message.Message{message.NewTextMessage(message.RoleAssistant, "hello")}
)

func TestNewOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		res     *agent.Result
		waitErr error
		status  agent.Status
		kind    string
		errText string
	}{
		{"completed", &agent.Result{Status: agent.StatusCompleted, Output: reply}, nil, agent.StatusCompleted, "", ""},
		{"interrupted with its error", &agent.Result{Status: agent.StatusInterrupted, Err: interrupted}, nil,
			agent.StatusInterrupted, "interrupted", "interrupted: user_cancel: interrupt signal"},
		{"interrupted without an error", &agent.Result{Status: agent.StatusInterrupted}, nil,
			agent.StatusInterrupted, "interrupted", "run: the turn ended interrupted"},
		{"canceled by its context", &agent.Result{Status: agent.StatusCanceled, Err: context.Canceled}, nil,
			agent.StatusCanceled, "aborted", "context canceled"},
		{"failed with a kind", &agent.Result{Status: agent.StatusFailed, Err: fault.New(fault.BudgetExceeded, "node", "too big")}, nil,
			agent.StatusFailed, "budget_exceeded", "node: too big"},
		{"failed without a kind", &agent.Result{Status: agent.StatusFailed, Err: errors.New("boom")}, nil,
			agent.StatusFailed, "internal", "boom"},
		{"no result", nil, fault.New(fault.NotAvailable, "start", "closing"), agent.StatusFailed, "not_available", "start: closing"},
		{"completed but wait failed", &agent.Result{Status: agent.StatusCompleted}, errors.New("late"),
			agent.StatusCompleted, "internal", "late"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := newOutcome("run-1", tt.res, tt.waitErr)
			assert.Equal(t, tt.status, o.status)
			assert.Equal(t, "run-1", o.runID)
			assert.Equal(t, tt.kind, o.kind)
			if tt.errText == "" {
				assert.NoError(t, o.err)
				return
			}
			require.Error(t, o.err)
			assert.Equal(t, tt.errText, o.err.Error())
		})
	}
}

func TestStatusLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    outcome
		want string
	}{
		{"completed", outcome{status: agent.StatusCompleted, runID: "run-1"}, "-- completed (run-1)"},
		{"interrupted", newOutcome("run-2", &agent.Result{Status: agent.StatusInterrupted, Err: interrupted}, nil),
			"-- interrupted (run-2): interrupted: interrupted: user_cancel: interrupt signal"},
		{"failed", outcome{status: agent.StatusFailed, runID: "run-3", err: errors.New("boom"), kind: "internal"},
			"-- failed (run-3): internal: boom"},
		{"completed with usage", newOutcome("run-4", &agent.Result{Status: agent.StatusCompleted,
			Usage: agent.Usage{InputTokens: 96, OutputTokens: 21, TotalTokens: 117}}, nil),
			"-- completed (run-4; tokens: 96 prompt + 21 completion = 117)"},
		{"interrupted with usage", newOutcome("run-5", &agent.Result{Status: agent.StatusInterrupted, Err: interrupted,
			Usage: agent.Usage{InputTokens: 5, OutputTokens: 2, TotalTokens: 7}}, nil),
			"-- interrupted (run-5; tokens: 5 prompt + 2 completion = 7): interrupted: interrupted: user_cancel: interrupt signal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, statusLine(tt.o))
		})
	}
}

// The --json object of each kind of outcome, against golden files.
func TestJSONResultGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    outcome
	}{
		{"completed", newOutcome("run-1", &agent.Result{Status: agent.StatusCompleted, Output: reply,
			State: map[string]any{"finalize_reason": "completed"}, Usage: agent.Usage{InputTokens: 12, OutputTokens: 3, TotalTokens: 15}}, nil)},
		{"interrupted", newOutcome("run-2", &agent.Result{Status: agent.StatusInterrupted, Err: interrupted}, nil)},
		{"no_result", newOutcome("run-3", nil, fault.New(fault.NotAvailable, "start", "the session is closing"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			require.NoError(t, writeJSON(&b, newJSONResult(tt.o)))
			golden(t, "result_"+tt.name+".json.golden", b.Bytes())
			var back jsonResult
			require.NoError(t, json.Unmarshal(b.Bytes(), &back))
			assert.Equal(t, string(tt.o.status), back.Status)
		})
	}
}

func TestConsoleStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		parts   []message.Part
		notice  string
		wantOut string
		wantErr string
	}{
		{"text as it comes", []message.Part{message.TextPart("Hel"), message.TextPart("lo\n")}, "", "Hello\n", ""},
		{"a tool call on a line of its own", []message.Part{message.TextPart("Let me look"),
			message.ToolCallPart("c1", "search", `{"q":"go"}`), message.ToolResultPart("c1", "3 hits", false)}, "",
			"Let me look\n[tool call search {\"q\":\"go\"}]\n[tool result 3 hits]\n", ""},
		{"a notice ends the open line", []message.Part{message.TextPart("half")}, "note", "half\n", "note\n"},
		{"other parts are skipped", []message.Part{message.DataPart(json.RawMessage(`{}`), "application/json")}, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errw bytes.Buffer
			c := &console{out: &out, errw: &errw}
			for _, p := range tt.parts {
				c.streamPart(p)
			}
			if tt.notice != "" {
				c.notice("%s", tt.notice)
			}
			assert.Equal(t, tt.wantOut, out.String())
			assert.Equal(t, tt.wantErr, errw.String())
		})
	}
}

func TestConsoleQuietAndResult(t *testing.T) {
	t.Parallel()
	var out, errw bytes.Buffer
	c := &console{out: &out, errw: &errw, quiet: true}
	c.streamPart(message.TextPart("hidden"))
	c.result(reply)
	assert.Empty(t, out.String(), "--json prints no stream and no result text")

	loud := &console{out: &out, errw: &errw}
	loud.result(reply)
	assert.Equal(t, "hello\n", out.String(), "output nothing streamed is printed at the end")
	loud.result(reply)
	assert.Equal(t, "hello\n", out.String(), "and only once")
}

func TestDecodePrompt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := func(subject string, payload any) event.Envelope {
		e, err := event.NewEnvelope(ctx, subject, payload)
		require.NoError(t, err)
		return e.WithHeader(event.HeaderRunID, "run-1")
	}
	asked := env(event.SubjectPromptRequested("run-1"), session.PromptRequested{RunID: "run-1", PromptID: "p1",
		Prompt: agent.UserPrompt{Parts: []message.Part{message.TextPart("Name?")}}})
	ev, ok := decodePrompt(asked)
	assert.True(t, ok)
	assert.Equal(t, promptEvent{id: "p1", text: "Name?"}, ev)

	resolved := env(event.SubjectPromptResolved("run-1"), session.PromptResolved{RunID: "run-1", PromptID: "p1", Status: session.PromptReplied})
	ev, ok = decodePrompt(resolved)
	assert.True(t, ok)
	assert.Equal(t, promptEvent{id: "p1", resolved: true}, ev)

	for name, e := range map[string]event.Envelope{
		"another run's prompt": env(event.SubjectPromptRequested("run-2"), session.PromptRequested{PromptID: "p"}),
		"no prompt id":         env(event.SubjectPromptRequested("run-1"), session.PromptRequested{}),
		"not a prompt":         env(event.SubjectRunStart("run-1"), map[string]any{}),
		"a bad payload":        env(event.SubjectPromptResolved("run-1"), []int{1}),
	} {
		_, ok := decodePrompt(e)
		assert.False(t, ok, name)
	}
}

// FuzzDecodePrompt: any prompt event payload decodes or is skipped,
// never panics.
func FuzzDecodePrompt(f *testing.F) {
	f.Add(`{"run_id":"r","prompt_id":"p","prompt":{"parts":[{"type":"text","text":"q"}]}}`, true)
	f.Add(`{"prompt_id":"p","status":"replied"}`, false)
	f.Add(`[]`, true)
	f.Fuzz(func(t *testing.T, payload string, requested bool) {
		subject := event.SubjectPromptResolved("run-1")
		if requested {
			subject = event.SubjectPromptRequested("run-1")
		}
		e := event.Envelope{Subject: subject, Payload: json.RawMessage(payload), Headers: map[string]string{event.HeaderRunID: "run-1"}}
		ev, ok := decodePrompt(e)
		if ok {
			assert.NotEmpty(t, ev.id)
			assert.Equal(t, !requested, ev.resolved)
		}
	})
}

func TestConsolePromptLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		echo bool
		do   func(c *console)
		want string
	}{
		{"a notice ends the prompt's line", false, func(c *console) { c.ask("Name?"); c.notice("note") }, "? Name? \nnote\n"},
		{"a terminal shows the answer itself", false, func(c *console) { c.ask("Name?"); c.answered("Ada"); c.notice("n") }, "? Name? n\n"},
		{"a pipe does not", true, func(c *console) { c.ask("Name?"); c.answered("Ada"); c.notice("n") }, "? Name? Ada\nn\n"},
		{"end of input", true, func(c *console) { c.ask(" Name? \n"); c.noInput() }, "? Name? (end of input: no answer)\n"},
		{"end of input, prompt line ended", true, func(c *console) { c.ask("Name?"); c.notice("n"); c.noInput() },
			"? Name? \nn\n? (end of input: no answer)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errw bytes.Buffer
			c := &console{out: &out, errw: &errw, echo: tt.echo}
			tt.do(c)
			assert.Equal(t, tt.want, errw.String())
			assert.Empty(t, out.String())
		})
	}
}
