package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/tool"
)

const opInference = "run inference"

// Run makes one Generate call (REF 5.3.1): the channel's tail must be
// a user or tool message; the reply is appended to the channel, its text
// written to output_key, its usage to usage_key and reported to the host,
// and tool_pending_key set to whether it asks for tools. In stream mode
// each delta is published as it arrives. When the call fails, text that
// was already streamed is committed to the channel, the usage reported,
// and the error returned with the provider's kind.
func (h *inferenceHandler) Run(ctx context.Context, c *Call) error {
	msgs := c.Board.Channel(h.channel)
	if len(msgs) == 0 {
		return fault.New(fault.Validation, opInference, "node %q: channel %q is empty", c.Node, h.channel)
	}
	if tail := msgs[len(msgs)-1].Role; tail != message.RoleUser && tail != message.RoleTool {
		return fault.New(fault.Validation, opInference, "node %q: the last message of channel %q is from %q, want user or tool",
			c.Node, h.channel, tail)
	}
	system, err := h.systemPrompt(c)
	if err != nil {
		return err
	}
	defs, err := h.definitions()
	if err != nil {
		return fault.Wrap(fault.Validation, err, opInference, "node %q", c.Node)
	}
	req := model.Request{Model: h.model, System: system, Messages: message.CloneAll(msgs), Tools: defs, ToolChoice: h.toolChoice,
		Profile: h.profile, Intent: h.intent, Extensions: cloneExtensions(h.extensions)}
	out := &inferenceOutput{ctx: ctx, c: c}
	start := time.Now()
	resp, genErr := h.generate(ctx, c, req, out)
	h.publishModelCall(ctx, c, start, resp, genErr)
	if genErr != nil {
		return h.failed(ctx, c, out, resp, genErr)
	}
	return h.commit(ctx, c, resp, defs)
}

// generate asks the provider, or a replaying host, for the reply, and
// journals it.
func (h *inferenceHandler) generate(ctx context.Context, c *Call, req model.Request, out *inferenceOutput) (model.Response, error) {
	args := inferenceArgs(h.providerKey, h.stream, req)
	var resp model.Response
	var err error
	if rp, ok := agent.CapabilityFromHost[InferenceReplayer](c.Host); ok {
		var rec InferenceRecord
		if rec, err = rp.ReplayInference(c.Node, args); err != nil {
			return model.Response{}, err // a divergence is not part of the run's record
		}
		resp, err = rec.replay(ctx, out)
	} else {
		var onDelta func(model.Delta) error
		if h.stream {
			onDelta = out.delta
		}
		resp, err = h.provider.Generate(ctx, req, onDelta)
	}
	journalInference(callJournal(c), c.Node, args, resp, out.recorded, err)
	return resp, err
}

// commit writes a successful reply to the board and reports its usage. A
// reply that calls a tool the node does not offer is recovered or fails
// with ErrUndefinedTool (REF 8.7).
func (h *inferenceHandler) commit(ctx context.Context, c *Call, resp model.Response, defs []tool.Definition) error {
	reply := resp.Message.Clone()
	reply.Role = message.RoleAssistant
	if err := reply.Validate(); err != nil {
		return fault.Wrap(fault.Internal, err, opInference, "node %q: provider %s returned an invalid reply", c.Node, h.providerKey)
	}
	if undefined := undefinedCalls(reply, defs); len(undefined) > 0 {
		if err := h.recoverUndefined(c, reply, undefined, defs); err != nil {
			if uerr := h.report(ctx, c, resp.Usage); uerr != nil {
				return uerr
			}
			return err
		}
		if h.outputKey != "" {
			c.Board.Vars[h.outputKey] = reply.Text()
		}
		return h.report(ctx, c, resp.Usage)
	}
	if h.recovery.enabled {
		c.Board.Vars[h.recovery.pendingKey] = false
	}
	c.Board.Append(h.channel, reply)
	pending := resp.FinishReason == model.FinishToolCalls && len(reply.ToolCalls()) > 0
	c.Board.Vars[h.pendingKey] = pending
	if h.outputKey != "" {
		c.Board.Vars[h.outputKey] = reply.Text()
	}
	return h.report(ctx, c, resp.Usage)
}

// failed commits what a failed call streamed (REF 5.3.1), reports
// its usage and returns the error.
func (h *inferenceHandler) failed(ctx context.Context, c *Call, out *inferenceOutput, resp model.Response, err error) error {
	if text := out.text.String(); text != "" {
		c.Board.Append(h.channel, message.NewTextMessage(message.RoleAssistant, text))
		if h.outputKey != "" {
			c.Board.Vars[h.outputKey] = text
		}
	}
	if resp.Usage != (agent.Usage{}) {
		if uerr := h.report(ctx, c, resp.Usage); uerr != nil && fault.Is(uerr, fault.BudgetExceeded) {
			err = uerr
		}
	}
	return fault.Wrap(fault.KindOr(err, fault.NotAvailable), err, opInference, "node %q: provider %s", c.Node, h.providerKey)
}

// report writes the usage to usage_key and reports it to the host. Only a
// BudgetExceeded or RateLimit answer (a quota) fails the node; other errors
// are for observability.
func (h *inferenceHandler) report(ctx context.Context, c *Call, u agent.Usage) error {
	if h.usageKey != "" {
		c.Board.Vars[h.usageKey] = map[string]any{
			"input": float64(u.InputTokens), "output": float64(u.OutputTokens), "total": float64(u.TotalTokens)}
	}
	if err := c.Host.ReportUsage(ctx, u); err != nil &&
		(fault.Is(err, fault.BudgetExceeded) || fault.Is(err, fault.RateLimit) || ctx.Err() != nil) {
		return fault.Wrap(fault.KindOr(err, fault.BudgetExceeded), err, opInference, "node %q: report usage", c.Node)
	}
	return nil
}

// inferenceOutput follows a streamed reply: its text so far, the deltas
// for the journal, and their publication.
type inferenceOutput struct {
	ctx      context.Context
	c        *Call
	text     strings.Builder
	recorded []DeltaRecord
}

// delta publishes one delta as the stream delta host.emit would publish
// (a text part for a token, a tool_call part for a call), speculative
// inside a parallel branch. A failed publish is not the model's failure:
// it ends the call only when ctx has ended.
func (o *inferenceOutput) delta(d model.Delta) error {
	o.recorded = append(o.recorded, deltaRecordOf(d))
	var part message.Part
	switch {
	case d.ToolCall != nil:
		part = message.ToolCallPart(d.ToolCall.ID, d.ToolCall.Name, d.ToolCall.Arguments)
	case d.Text != "":
		o.text.WriteString(d.Text)
		part = message.TextPart(d.Text)
	default:
		return nil
	}
	delta := event.StreamDeltaPayload{Type: event.DeltaPart, Part: &part}
	if o.c.ForkID != "" {
		delta.Speculative, delta.ForkID, delta.BranchID = true, o.c.ForkID, o.c.BranchID
	}
	return o.publish(delta)
}

func (o *inferenceOutput) publish(delta event.StreamDeltaPayload) error {
	ctx := o.ctx
	if err := delta.Validate(); err != nil {
		return nil
	}
	body, err := json.Marshal(delta)
	if err != nil {
		return nil
	}
	subject := event.SubjectStreamDelta(o.c.Run.ID, event.Actor(o.c.Run.AgentID, o.c.Node))
	env, err := event.NewEnvelope(ctx, subject, json.RawMessage(body))
	if err != nil {
		return nil
	}
	env.Headers = map[string]string{event.HeaderRunID: o.c.Run.ID, event.HeaderAgentID: o.c.Run.AgentID, event.HeaderNodeID: o.c.Node}
	if err := o.c.Host.Publish(ctx, env); err != nil && ctx.Err() != nil {
		return fault.FromContext(ctx.Err(), opInference)
	}
	return nil
}

// The defaults of the undefined tool recovery keys.
const (
	// DefaultRecoverPendingKey is the board var an inference node with
	// undefined_tool_recovery sets to whether it answered undefined tool
	// calls, unless recover_pending_key says otherwise.
	DefaultRecoverPendingKey = "recover_pending"
	// DefaultRecoverCountKey is the board var that counts the recoveries
	// of a run, unless recover_count_key says otherwise.
	DefaultRecoverCountKey = "recover_count"
	// DefaultMaxRecoveries is undefined_tool_recovery.max_per_run when it
	// is absent.
	DefaultMaxRecoveries = 2
)

// ErrUndefinedTool is the error of a reply that calls a tool the node did
// not offer (REF 8.7): a Validation error, matched with errors.Is.
var ErrUndefinedTool = fault.New(fault.Validation, "", "undefined_tool")

// RecoveryConfig is InferenceConfig.UndefinedToolRecovery.
type RecoveryConfig struct {
	// Enabled answers undefined tool calls with error results instead of
	// failing the node.
	Enabled bool `json:"enabled,omitempty"`
	// MaxPerRun caps the recoveries of a run (counted in recover_count_key);
	// default 2. The call after the last recovery fails with
	// ErrUndefinedTool.
	MaxPerRun *int `json:"max_per_run,omitempty"`
}

// recovery is the checked recovery config of a handler.
type recovery struct {
	enabled    bool
	max        int
	pendingKey string
	countKey   string
}

// buildRecovery checks the recovery keys of c.
func buildRecovery(c InferenceConfig) (recovery, error) {
	r := recovery{max: DefaultMaxRecoveries, pendingKey: c.RecoverPendingKey, countKey: c.RecoverCountKey}
	if r.pendingKey == "" {
		r.pendingKey = DefaultRecoverPendingKey
	}
	if r.countKey == "" {
		r.countKey = DefaultRecoverCountKey
	}
	if c.UndefinedToolRecovery != nil {
		r.enabled = c.UndefinedToolRecovery.Enabled
		if m := c.UndefinedToolRecovery.MaxPerRun; m != nil {
			if *m < 0 {
				return r, fault.New(fault.Validation, "", "undefined_tool_recovery.max_per_run: must not be negative, got %d", *m)
			}
			r.max = *m
		}
	}
	if r.pendingKey == r.countKey {
		return r, fault.New(fault.Validation, "", "recover_pending_key and recover_count_key are both %q", r.pendingKey)
	}
	return r, nil
}

// undefinedCalls returns the calls of reply whose tool is not in defs.
func undefinedCalls(reply message.Message, defs []tool.Definition) []message.ToolCall {
	var out []message.ToolCall
	for _, call := range reply.ToolCalls() {
		if !slices.ContainsFunc(defs, func(d tool.Definition) bool { return d.Name == call.Name }) {
			out = append(out, call)
		}
	}
	return out
}

// available lists the offered tool names for messages ("none" when no
// tool is offered).
func available(defs []tool.Definition) string {
	if len(defs) == 0 {
		return "none"
	}
	names := make([]string, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

// recoverUndefined decides what a reply with undefined calls does: with recovery
// enabled and runs left, it appends the reply and a tool message that
// answers every call (undefined ones with "not defined", the others with
// "not run"), sets recover_pending and counts the recovery; otherwise it
// returns ErrUndefinedTool naming the node and the tool.
func (h *inferenceHandler) recoverUndefined(c *Call, reply message.Message, undefined []message.ToolCall, defs []tool.Definition) error {
	names := make([]string, len(undefined))
	for i, u := range undefined {
		names[i] = fmt.Sprintf("%q", u.Name)
	}
	if !h.recovery.enabled {
		return fault.Wrap(fault.Validation, ErrUndefinedTool, opInference, "node %q: the reply calls tool %s, which the node does not offer (available: %s)",
			c.Node, strings.Join(names, ", "), available(defs))
	}
	count := boardCount(c.Board.Vars[h.recovery.countKey])
	if count >= h.recovery.max {
		return fault.Wrap(fault.Validation, ErrUndefinedTool, opInference,
			"node %q: the reply calls tool %s, which the node does not offer (available: %s), after %d of %d recoveries",
			c.Node, strings.Join(names, ", "), available(defs), count, h.recovery.max)
	}
	results := message.Message{Role: message.RoleTool}
	for _, call := range reply.ToolCalls() {
		text := fmt.Sprintf("tool %q is not defined; available: %s", call.Name, available(defs))
		if !slices.ContainsFunc(undefined, func(u message.ToolCall) bool { return u.ID == call.ID && u.Name == call.Name }) {
			text = fmt.Sprintf("tool %q was not run: the same reply called an undefined tool; call it again if needed", call.Name)
		}
		results.Parts = append(results.Parts, message.ToolResultPart(call.ID, text, true))
	}
	c.Board.Append(h.channel, reply, results)
	c.Board.Vars[h.pendingKey] = false
	c.Board.Vars[h.recovery.pendingKey] = true
	c.Board.Vars[h.recovery.countKey] = float64(count + 1)
	return nil
}

// boardCount reads a board var as a count: a number, or 0.
func boardCount(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	}
	return 0
}
