package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
)

// ResultVar is the board var a tool's result is read from: a tool writes
// board.setVar("result", value), or, in JavaScript, returns the value.
const ResultVar = "result"

// NodeType is the node type a tool's invocation reports (node.type()).
const NodeType = "tool"

// jsReturnPrefix makes a JavaScript tool's return value its result. It
// adds no line, so line numbers stay the source's own.
const (
	jsReturnPrefix = `const ret = (function() {`
	jsReturnSuffix = "\n}).call(undefined); if (ret !== undefined) board.setVar(\"" + ResultVar + "\", ret);"
)

// Assembly is a tool.Assembly of tools declared in a document, each a
// script run in a sandbox.Runtime. It is immutable and safe for concurrent
// use.
type Assembly struct {
	tools  map[string]*scriptTool
	defs   []tool.Definition
	limits sandbox.Limits // the settings' limits tightened by every runtime's
}

var _ tool.Assembly = (*Assembly)(nil)

// scriptTool is one declared tool.
type scriptTool struct {
	def      tool.Definition
	schema   *Schema
	rt       sandbox.Runtime
	script   sandbox.Script
	limits   sandbox.Limits // the settings' limits
	rtLimits sandbox.Limits // the runtime's own, when it tells them
}

// Definitions lists the tools, sorted by name. The slice is the caller's.
func (a *Assembly) Definitions() []tool.Definition {
	out := make([]tool.Definition, len(a.defs))
	for i, d := range a.defs {
		out[i] = d
		out[i].Parameters = bytes.Clone(d.Parameters)
	}
	return out
}

// Limits returns the tightest limits of the assembly's settings and
// runtimes: a caller that makes the host ABI of a batch enforces them.
func (a *Assembly) Limits() sandbox.Limits { return a.limits }

// Execute runs the calls of b one after the other, in the model's order,
// and returns one result per call carrying its id. Each call is validated
// against its tool's schema and then runs as one sandbox.Invocation:
// the arguments are the script's config global, the board is a fresh one
// of its own, and the result is the board var "result" (or a JavaScript
// tool's return value). An unknown tool, arguments that fail the schema,
// a script error and a limit of the call (wall time, memory, value size,
// a refused capability...) are results with IsError set; the next call
// runs as usual. Execute fails only when ctx ends (the run's cancel,
// deadline or run time) or a tool signals an interrupt.
func (a *Assembly) Execute(ctx context.Context, b tool.Batch) ([]message.ToolResult, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "execute tools", "ctx must not be nil")
	}
	abi := b.ABI
	if abi == nil {
		abi = hostabi.NewDispatcher(hostabi.Config{Host: b.Host, Run: b.Run, Node: b.Node,
			Limits: a.limits.Tighten(b.Limits)})
	}
	out := make([]message.ToolResult, 0, len(b.Calls))
	for _, c := range b.Calls {
		if err := ctx.Err(); err != nil {
			return nil, a.batchError(ctx, b, err)
		}
		res, err := a.call(ctx, b, abi, c)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// call runs one call; the error is for the batch.
func (a *Assembly) call(ctx context.Context, b tool.Batch, abi sandbox.ABI, c message.ToolCall) (message.ToolResult, error) {
	t, ok := a.tools[c.Name]
	if !ok {
		return failed(c, "unknown tool %q (tools: %s)", abbreviate(c.Name), a.names()), nil
	}
	// Zero fields leave the runtime's own limits; maxValue is the value
	// limit the call ends up with.
	limits := t.limits.Tighten(b.Limits)
	maxValue := t.rtLimits.Tighten(limits).WithDefaults().MaxValueBytes
	args, err := t.arguments(c.Arguments, maxValue)
	if err != nil {
		return failed(c, "tool %q: invalid arguments: %v", c.Name, err), nil
	}
	board := agent.NewBoard()
	out, err := t.rt.Invoke(ctx, sandbox.Invocation{
		Node: b.Node, Type: NodeType, Script: t.script, Config: args, Board: *board, ABI: abi, Limits: limits,
		Run: sandbox.RunInfo{RunID: b.Run.ID, AgentID: b.Run.AgentID, ContextID: b.Run.ContextID, ParentRunID: b.Run.ParentRunID, Tenant: b.Run.Tenant},
	})
	switch {
	case ctx.Err() != nil:
		return message.ToolResult{}, a.batchError(ctx, b, err)
	case errors.Is(err, fault.Interrupted):
		return message.ToolResult{}, fmt.Errorf("execute tools: node %q: tool %q: %w", b.Node, c.Name, err)
	case err != nil:
		return failed(c, "tool %q failed: %s", c.Name, describe(err)), nil
	}
	out.Writes.Apply(board)
	content, err := resultText(board.Vars[ResultVar], maxValue, b.Node)
	if err != nil {
		return failed(c, "tool %q failed: %s", c.Name, describe(err)), nil
	}
	return message.ToolResult{ToolCallID: c.ID, Content: content}, nil
}

// arguments decodes and validates a call's arguments: a JSON object (an
// empty text is {}) no larger than max bytes that the tool's schema
// accepts.
func (t *scriptTool) arguments(text string, max int64) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		text = "{}"
	}
	if int64(len(text)) > max {
		return nil, fmt.Errorf("%d bytes, more than max_value_bytes %d", len(text), max)
	}
	v, err := decodeJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("not a JSON value: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("want a JSON object, got %s", typeOf(v))
	}
	if msg := t.schema.violations(v); msg != "" {
		return nil, errors.New(msg)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(text), &args); err != nil {
		return nil, err
	}
	return args, nil
}

// resultText turns a tool's result into the content the model sees: a
// string as it is, nothing as "", anything else as compact JSON; bytes
// that are not UTF-8 become U+FFFD.
func resultText(v any, max int64, node string) (string, error) {
	var text string
	switch r := v.(type) {
	case nil:
		return "", nil
	case string:
		text = r
	default:
		b, err := json.Marshal(r)
		if err != nil {
			return "", fault.Wrap(fault.Internal, err, "", "the result is not JSON")
		}
		text = string(b)
	}
	if int64(len(text)) > max {
		return "", &sandbox.LimitError{Limit: sandbox.LimitValueBytes, Node: node, Max: max}
	}
	return strings.ToValidUTF8(text, "\uFFFD"), nil
}

// batchError is the error of a batch whose ctx ended: the ctx's cause,
// which keeps the run's own reason (cancel, deadline, run time).
func (a *Assembly) batchError(ctx context.Context, b tool.Batch, err error) error {
	cause := context.Cause(ctx)
	if fault.KindOf(cause) == nil {
		cause = fault.FromContext(cause, "execute tools")
	}
	if err != nil && !errors.Is(err, cause) {
		return fmt.Errorf("execute tools: node %q: %w", b.Node, errors.Join(cause, err))
	}
	return fmt.Errorf("execute tools: node %q: %w", b.Node, cause)
}

// failed returns an error result for c.
func failed(c message.ToolCall, format string, args ...any) message.ToolResult {
	return message.ToolResult{ToolCallID: c.ID, Content: strings.ToValidUTF8(fmt.Sprintf(format, args...), "\uFFFD"), IsError: true}
}

// describe renders a tool's error for the model: a script's own class and
// message, or the error's text.
func describe(err error) string {
	var se *sandbox.ScriptError
	if errors.As(err, &se) {
		msg := se.Kind.String()
		if se.Message != "" {
			msg += ": " + se.Message
		}
		if se.Where != "" {
			msg += " (at " + se.Where + ")"
		}
		return msg
	}
	return err.Error()
}

func (a *Assembly) names() string {
	out := make([]string, len(a.defs))
	for i, d := range a.defs {
		out[i] = d.Name
	}
	return strings.Join(out, ", ")
}
