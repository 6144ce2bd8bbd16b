package graph

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
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
	results, err := asm.Execute(ctx, b)
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
