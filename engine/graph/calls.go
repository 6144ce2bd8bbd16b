package graph

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
)

// ToolTypeName is the name of the built-in tool node type.
const ToolTypeName = "tool"

// ToolJournalFunc is the function name under which the tool node records
// each tool result in the run's journal: args [call], result the
// tool.Result as JSON ({tool_call_id, content, is_error?}).
const ToolJournalFunc = "tool"

const opTool = "run tool node"

// ToolConfig is the config of a tool node (REF 5.3.2).
type ToolConfig struct {
	// MessagesChannel is the channel whose last message holds the calls
	// and that receives the tool message; default __main_channel.
	MessagesChannel string `json:"messages_channel,omitempty"`
	// ResultsKey, when set, is the board var that receives the raw
	// results: [{tool_call_id, name, content, is_error}], in call order.
	ResultsKey string `json:"results_key,omitempty"`
}

// LimitedAssembly is a tool.Assembly that tells its limits (the script
// assembly of engine/tools does): the tool node then tightens the host
// ABI of the batch with them, as a script node does with its runtime's.
type LimitedAssembly interface {
	tool.Assembly
	Limits() sandbox.Limits
}

// ToolType returns the tool node type: it runs the tool calls of the last
// message of its channel, an assistant message, through the agent's
// tool.Assembly, keeping the model's call ids, and appends one tool
// message with the results. The assembly is the engine's "tools"
// dependency when bound, else the one the host's tool.Catalog (the
// runtime's dynamic_catalog.tools) maps the run's agent to.
func ToolType() NodeType { return toolType{} }

type toolType struct{}

func (toolType) Name() string { return ToolTypeName }

func (toolType) Build(_ context.Context, in NodeInput) (Handler, error) {
	var c ToolConfig
	if err := DecodeConfig(in.Node.Config, &c); err != nil {
		return nil, err
	}
	if c.MessagesChannel == "" {
		c.MessagesChannel = agent.MainChannel
	}
	if strings.TrimSpace(c.MessagesChannel) != c.MessagesChannel {
		return nil, fault.New(fault.Validation, "", "messages_channel: %q has surrounding spaces", c.MessagesChannel)
	}
	if c.ResultsKey != "" && (strings.HasPrefix(c.ResultsKey, "__") || strings.TrimSpace(c.ResultsKey) != c.ResultsKey) {
		return nil, fault.New(fault.Validation, "", "results_key: %q is reserved or has surrounding spaces", c.ResultsKey)
	}
	h := &toolHandler{cfg: c}
	if v, ok := in.Deps[ToolsDep]; ok {
		a, isAssembly := v.(tool.Assembly)
		if !isAssembly || agent.IsNil(a) {
			return nil, fault.New(fault.Validation, "", "deps.%s: %T is not a %s", ToolsDep, v, tool.Kind)
		}
		h.asm = a
	}
	return h, nil
}

// toolHandler runs one tool node.
type toolHandler struct {
	cfg ToolConfig
	asm tool.Assembly // nil: the host's catalog
}

var (
	_ Handler       = (*toolHandler)(nil)
	_ LiteralConfig = (*toolHandler)(nil)
)

// LiteralKeys keeps the channel and key names as written.
func (h *toolHandler) LiteralKeys() []string { return []string{"messages_channel", "results_key"} }

// Run executes the batch of the channel's last message (REF 5.3.2).
func (h *toolHandler) Run(ctx context.Context, c *Call) error {
	calls, err := h.pendingCalls(c)
	if err != nil {
		return err
	}
	asm, err := h.assembly(c)
	if err != nil {
		return err
	}
	b := tool.Batch{Host: c.Host, Run: c.Run, Node: c.Node, Calls: calls, Limits: c.Limits}
	if l, ok := asm.(LimitedAssembly); ok {
		// The step's host ABI enforces the assembly's limits too; each
		// call's own are the assembly's business.
		c.Limits = l.Limits().Tighten(c.Limits)
	}
	b.ABI = c.ABI()
	start := time.Now()
	var results []message.ToolResult
	if j, replaying := replayingJournal(c); replaying {
		results, err = replayTools(c, j, calls)
	} else {
		results, err = asm.Execute(ctx, b)
	}
	publishToolCalls(ctx, c, start, calls, results, err)
	if err != nil {
		return fault.Wrap(fault.KindOr(err, fault.Internal), err, opTool, "node %q", c.Node)
	}
	if err := checkResults(c.Node, calls, results); err != nil {
		return err
	}
	journalResults(c, calls, results)
	msg := message.Message{Role: message.RoleTool, Parts: make([]message.Part, len(results))}
	for i, r := range results {
		msg.Parts[i] = message.ToolResultPart(r.ToolCallID, r.Content, r.IsError)
	}
	if err := msg.Validate(); err != nil {
		return fault.Wrap(fault.Internal, err, opTool, "node %q: the tool message", c.Node)
	}
	c.Board.Append(h.cfg.MessagesChannel, msg)
	if h.cfg.ResultsKey != "" {
		c.Board.Vars[h.cfg.ResultsKey] = rawResults(calls, results)
	}
	publishResults(ctx, c, results)
	return nil
}

// pendingCalls returns the tool calls of the channel's last message, which
// must be an assistant message with at least one.
func (h *toolHandler) pendingCalls(c *Call) ([]message.ToolCall, error) {
	msgs := c.Board.Channel(h.cfg.MessagesChannel)
	if len(msgs) == 0 {
		return nil, fault.New(fault.Validation, opTool, "node %q: channel %q is empty: want an assistant message with tool calls",
			c.Node, h.cfg.MessagesChannel)
	}
	tail := msgs[len(msgs)-1]
	calls := tail.ToolCalls()
	if tail.Role != message.RoleAssistant || len(calls) == 0 {
		return nil, fault.New(fault.Validation, opTool,
			"node %q: the last message of channel %q is a %s message with %d tool calls: want an assistant message with tool calls",
			c.Node, h.cfg.MessagesChannel, tail.Role, len(calls))
	}
	return calls, nil
}

// sessionCatalog is the capability a session turn's host carries: the
// tool catalog the runtime's dynamic_catalog.tools resolved for the
// session's agent (a tool.Assembly, or nil).
type sessionCatalog interface {
	SessionCatalog() any
}

// assembly returns the engine's tools dependency, else the host catalog's
// assembly for the run's agent, else the session's catalog.
func (h *toolHandler) assembly(c *Call) (tool.Assembly, error) {
	if h.asm != nil {
		return h.asm, nil
	}
	if cat, ok := tool.CatalogFromHost(c.Host); ok {
		if a, ok := cat.ToolAssembly(c.Run.AgentID); ok && !agent.IsNil(a) {
			return a, nil
		}
	}
	if s, ok := agent.CapabilityFromHost[sessionCatalog](c.Host); ok {
		if a, ok := s.SessionCatalog().(tool.Assembly); ok && !agent.IsNil(a) {
			return a, nil
		}
	}
	return nil, fault.New(fault.NotFound, opTool,
		"node %q: no tool assembly for agent %q: bind deps.%s on the engine or map the agent in runtime.dynamic_catalog.tools",
		c.Node, c.Run.AgentID, ToolsDep)
}

// checkResults holds an assembly to its contract: one result per call, in
// order, each with its call's id.
func checkResults(node string, calls []message.ToolCall, results []message.ToolResult) error {
	if len(results) != len(calls) {
		return fault.New(fault.Internal, opTool, "node %q: the assembly returned %d results for %d calls", node, len(results), len(calls))
	}
	for i, r := range results {
		if r.ToolCallID != calls[i].ID {
			return fault.New(fault.Internal, opTool, "node %q: result %d answers call %q, want %q",
				node, i, r.ToolCallID, calls[i].ID)
		}
	}
	return nil
}

// rawResults is the results_key value: JSON-compatible maps.
func rawResults(calls []message.ToolCall, results []message.ToolResult) []any {
	out := make([]any, len(results))
	for i, r := range results {
		out[i] = map[string]any{"tool_call_id": r.ToolCallID, "name": calls[i].Name, "content": r.Content,
			"is_error": r.IsError}
	}
	return out
}

// toolCallArgs is the journal's argument array of one call.
func toolCallArgs(call message.ToolCall) json.RawMessage {
	b, err := json.Marshal([]message.ToolCall{call})
	if err != nil {
		return json.RawMessage("[]")
	}
	return b
}

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

// DelegateTypeName is the name of the built-in delegate node type.
const DelegateTypeName = "delegate"

// DelegateConfig is the config of a delegate node: it runs another agent
// through the run host's delegation service, exactly as a script's
// host.delegate(agent, message, options) does, so the document must grant
// "delegate" or "delegate:<agent>" and the result is journaled. String
// values may hold ${board...} references.
type DelegateConfig struct {
	// Agent is the target agent id. Required.
	Agent string `json:"agent"`
	// Message is the text of the user message the target starts with.
	// Exactly one of Message and MessageChannel is set.
	Message *string `json:"message,omitempty"`
	// MessageChannel names a board channel whose last message the target
	// starts with; the channel must not be empty.
	MessageChannel string `json:"message_channel,omitempty"`
	// Inputs become the target board's vars.
	Inputs map[string]any `json:"inputs,omitempty"`
	// IdempotencyKey makes a retried node replay the first delegation.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// OutputKey is the var that receives the text of the target's output.
	OutputKey string `json:"output_key,omitempty"`
	// OutputChannel is the channel the target's output messages are
	// appended to.
	OutputChannel string `json:"output_channel,omitempty"`
	// ResultKey is the var that receives the whole result object (id,
	// target, status, run_id, output, text, error).
	ResultKey string `json:"result_key,omitempty"`
	// AllowFailure keeps the run going when the delegated run failed or was
	// canceled: the result is written and the node succeeds. By default
	// such a run fails the node with the delegation's error.
	AllowFailure bool `json:"allow_failure,omitempty"`
}

// check validates the shape of a config.
func (c DelegateConfig) check() error {
	switch {
	case strings.TrimSpace(c.Agent) == "":
		return fault.New(fault.Validation, "", "agent: the target agent is required")
	case (c.Message != nil) == (c.MessageChannel != ""):
		return fault.New(fault.Validation, "", "message: exactly one of message and message_channel is required")
	}
	return nil
}

// DelegateType returns the delegate node type (DelegateConfig).
func DelegateType() NodeType { return delegateType{} }

type delegateType struct{}

func (delegateType) Name() string { return DelegateTypeName }

func (delegateType) Build(_ context.Context, in NodeInput) (Handler, error) {
	var c DelegateConfig
	if err := DecodeConfig(in.Node.Config, &c); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return delegateHandler{}, nil
}

type delegateHandler struct{}

var _ Handler = delegateHandler{}

// Run delegates once and writes the result to the board.
func (delegateHandler) Run(ctx context.Context, c *Call) error {
	cfg, err := delegateConfig(c)
	if err != nil {
		return err
	}
	args, err := delegateArgs(c, cfg)
	if err != nil {
		return err
	}
	abi := c.ABI()
	if abi == nil {
		return fault.New(fault.NotAvailable, "delegate", "node %q: no host abi for this call", c.Node)
	}
	raw, err := abi.Call(ctx, hostabi.FuncDelegate, args)
	if err != nil {
		return err
	}
	var res hostabi.DelegateResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fault.Wrap(fault.Internal, err, "delegate", "node %q: decode the result", c.Node)
	}
	if err := writeDelegateResult(c, cfg, res, raw); err != nil {
		return err
	}
	if res.Status == delegation.StatusSucceeded || cfg.AllowFailure {
		return nil
	}
	return delegateFailure(c.Node, res)
}

// delegateConfig decodes the resolved config of the call.
func delegateConfig(c *Call) (DelegateConfig, error) {
	var cfg DelegateConfig
	raw, err := json.Marshal(c.Config)
	if err == nil {
		err = DecodeConfig(raw, &cfg)
	}
	if err == nil {
		err = cfg.check()
	}
	if err != nil {
		return cfg, fault.Wrap(fault.Validation, err, "delegate", "node %q: config", c.Node)
	}
	return cfg, nil
}

// delegateArgs builds host.delegate's argument array.
func delegateArgs(c *Call, cfg DelegateConfig) (json.RawMessage, error) {
	var msg any
	if cfg.Message != nil {
		msg = *cfg.Message
	} else {
		ch := c.Board.Channel(cfg.MessageChannel)
		if len(ch) == 0 {
			return nil, fault.New(fault.Validation, "delegate", "node %q: message_channel %q is empty", c.Node, cfg.MessageChannel)
		}
		msg = ch[len(ch)-1]
	}
	opts := map[string]any{}
	if cfg.Inputs != nil {
		opts["inputs"] = cfg.Inputs
	}
	if cfg.IdempotencyKey != "" {
		opts["idempotency_key"] = cfg.IdempotencyKey
	}
	b, err := json.Marshal([]any{cfg.Agent, msg, opts})
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, "delegate", "node %q: encode the arguments", c.Node)
	}
	return b, nil
}

// writeDelegateResult writes the output text, messages and result object.
func writeDelegateResult(c *Call, cfg DelegateConfig, res hostabi.DelegateResult, raw json.RawMessage) error {
	if cfg.OutputKey != "" {
		c.Board.Vars[cfg.OutputKey] = res.Text
	}
	if cfg.OutputChannel != "" && len(res.Output) > 0 {
		c.Board.Append(cfg.OutputChannel, res.Output...)
	}
	if cfg.ResultKey != "" {
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			return fault.Wrap(fault.Internal, err, "delegate", "node %q: decode the result", c.Node)
		}
		c.Board.Vars[cfg.ResultKey] = v
	}
	return nil
}

// delegateFailure is the node's error for a run that did not succeed: the
// delegation's error, with its kind (Aborted for a canceled run without
// one).
func delegateFailure(node string, res hostabi.DelegateResult) error {
	if res.Error == nil {
		return fault.New(fault.Aborted, "delegate", "node %q: agent %q: delegation %s ended %s", node, res.Target, res.ID, res.Status)
	}
	return fault.Wrap(fault.KindOr(res.Error.Err(), fault.Internal), res.Error.Err(), "delegate",
		"node %q: agent %q: delegation %s %s", node, res.Target, res.ID, res.Status)
}
