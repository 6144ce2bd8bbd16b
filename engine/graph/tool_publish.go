package graph

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

// journalResults records each tool result in the run's journal, when the
// host hands one over (JournalProvider): tool results are inputs from
// outside the run, which a replay takes from the journal.
func journalResults(c *Call, calls []message.ToolCall, results []message.ToolResult) {
	p, ok := agent.CapabilityFromHost[JournalProvider](c.Host)
	if !ok {
		return
	}
	j := p.Journal()
	for i, r := range results {
		res, err := json.Marshal(r)
		if err != nil {
			continue
		}
		j.Record(hostabi.Entry{Node: c.Node, Func: ToolJournalFunc, Args: toolCallArgs(calls[i]), Result: res})
	}
}

// publishResults publishes each result as a tool_result stream delta, as
// host.emit("tool_result", ...) does, speculative inside a parallel
// branch. A failed publish is only logged.
func publishResults(ctx context.Context, c *Call, results []message.ToolResult) {
	subject := event.SubjectStreamDelta(c.Run.ID, event.Actor(c.Run.AgentID, c.Node))
	for _, r := range results {
		err := publishResult(ctx, c, subject, r)
		if err != nil {
			logWarn(ctx, c.Host, "tool node: result delta not published", map[string]any{
				"node": c.Node, "run_id": c.Run.ID, "tool_call_id": r.ToolCallID, "error": err.Error()})
		}
	}
}

func publishResult(ctx context.Context, c *Call, subject string, r message.ToolResult) error {
	payload, err := json.Marshal(map[string]any{"tool_call_id": r.ToolCallID, "content": r.Content, "is_error": r.IsError})
	if err != nil {
		return err
	}
	delta, err := hostabi.EmitDelta(hostabi.EmitToolResult, payload)
	if err != nil {
		return err
	}
	if c.ForkID != "" {
		delta.Speculative, delta.ForkID, delta.BranchID = true, c.ForkID, c.BranchID
	}
	if err := delta.Validate(); err != nil {
		return err
	}
	env, err := event.NewEnvelope(ctx, subject, delta)
	if err != nil {
		return err
	}
	env.Headers = map[string]string{
		event.HeaderRunID: c.Run.ID, event.HeaderAgentID: c.Run.AgentID, event.HeaderNodeID: c.Node,
	}
	return c.Host.Publish(ctx, env)
}

// logWarn logs through the host's log sink when it has one, else the
// process logger.
func logWarn(ctx context.Context, h agent.Host, msg string, attrs map[string]any) {
	if sink, ok := agent.CapabilityFromHost[agent.LogSink](h); ok {
		sink.Log(ctx, "warn", msg, attrs)
		return
	}
	args := make([]any, 0, 2*len(attrs))
	for _, k := range []string{"node", "run_id", "tool_call_id", "error"} {
		if v, ok := attrs[k]; ok {
			args = append(args, k, v)
		}
	}
	slog.Default().WarnContext(ctx, msg, args...)
}
