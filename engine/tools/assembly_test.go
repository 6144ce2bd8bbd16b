package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const cityParams = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

// Definitions come back sorted by name, with the schema as compact JSON.
func TestDefinitions(t *testing.T) {
	t.Parallel()
	a := newAssembly(t, newJS(t),
		jsTool("weather", "{\n  \"type\": \"object\"\n}", "return 1"),
		jsTool("add", "", "return 2"))
	defs := a.Definitions()
	require.Len(t, defs, 2)
	assert.Equal(t, tool.Definition{Name: "add", Description: "the add tool", Parameters: json.RawMessage(`{"type":"object"}`)}, defs[0])
	assert.Equal(t, "weather", defs[1].Name)
	assert.JSONEq(t, `{"type":"object"}`, string(defs[1].Parameters))
	defs[0].Parameters[0] = 'X'
	assert.Equal(t, byte('{'), a.Definitions()[0].Parameters[0], "the caller's copy")
}

// Each call runs in the sandbox with its arguments as config and a board
// of its own; a JavaScript tool's return value, or the board var result,
// is the content; every result carries its call's id, in order.
func TestExecuteResults(t *testing.T) {
	t.Parallel()
	a := newAssembly(t, newJS(t),
		jsTool("weather", cityParams, `return {city: config.city, temp_c: 21, board: board.getVars()}`),
		jsTool("echo", "", `board.setVar("result", "said " + config.text)`),
		jsTool("quiet", "", `board.setVar("x", 1)`),
		jsTool("override", "", `board.setVar("result", "var"); return "returned"`))
	res, err := a.Execute(context.Background(), batch(agenttest.NewHost(),
		call("c1", "weather", `{"city":"Oslo"}`), call("c2", "echo", `{"text":"hi"}`),
		call("c3", "quiet", ""), call("c4", "override", "{}")))
	require.NoError(t, err)
	require.Len(t, res, 4)
	assert.Equal(t, message.ToolResult{ToolCallID: "c1", Content: `{"board":{},"city":"Oslo","temp_c":21}`}, res[0],
		"the board is the call's own, empty")
	assert.Equal(t, message.ToolResult{ToolCallID: "c2", Content: "said hi"}, res[1])
	assert.Equal(t, message.ToolResult{ToolCallID: "c3", Content: ""}, res[2])
	assert.Equal(t, message.ToolResult{ToolCallID: "c4", Content: "returned"}, res[3])
}

// A call that cannot run is an error result the model sees, and the calls
// after it run as usual.
func TestExecuteErrorResults(t *testing.T) {
	t.Parallel()
	a := newAssembly(t, newJS(t),
		jsTool("weather", cityParams, `return config.city`),
		jsTool("boom", "", `throw new Error("kaput")`),
		jsTool("refuse", "", `signal.error({kind: "not_found", message: "no such city"})`),
		jsTool("typo", "", `return undefinedName + 1`))
	cases := []struct {
		call    message.ToolCall
		content string
	}{
		{call("c1", "nope", `{}`), `unknown tool "nope" (tools: boom, refuse, typo, weather)`},
		{call("c2", "weather", `{}`), `tool "weather": invalid arguments: $.city: required`},
		{call("c3", "weather", `{"city":1}`), `$.city: want string, got integer`},
		{call("c4", "weather", `[1]`), `invalid arguments: want a JSON object, got array`},
		{call("c5", "weather", `{"city":`), `invalid arguments: not a JSON value`},
		{call("c6", "boom", ``), `tool "boom" failed: internal: Error: kaput`},
		{call("c7", "refuse", ``), `tool "refuse" failed: not_found: no such city`},
		{call("c8", "typo", ``), `undefinedName`},
	}
	calls := []message.ToolCall{}
	for _, tc := range cases {
		calls = append(calls, tc.call)
	}
	calls = append(calls, call("ok", "weather", `{"city":"Rome"}`))
	res, err := a.Execute(context.Background(), batch(agenttest.NewHost(), calls...))
	require.NoError(t, err)
	require.Len(t, res, len(cases)+1)
	for i, tc := range cases {
		assert.Equal(t, tc.call.ID, res[i].ToolCallID)
		assert.True(t, res[i].IsError, tc.call.ID)
		assert.Contains(t, res[i].Content, tc.content, tc.call.ID)
	}
	assert.Equal(t, message.ToolResult{ToolCallID: "ok", Content: "Rome"}, res[len(cases)])
}

// Adversarial tools hit a limit or a refusal of the sandbox: each ends in
// an error result naming it, and the next call of the same batch is fine.
func TestExecuteAdversarial(t *testing.T) {
	t.Parallel()
	a := newAssembly(t, newJS(t),
		jsTool("loop", "", `while (true) {}`),
		jsTool("huge", "", `return "x".repeat(256 * 1024)`),
		jsTool("hugevar", "", `board.setVar("result", "y".repeat(256 * 1024))`),
		jsTool("recurse", "", `function f(n) { return f(n + 1) + 1 } return f(0)`),
		jsTool("publish", "", `host.publish("leak", {secret: 1}); return "published"`),
		jsTool("bigargs", "", `return "never"`),
		jsTool("fine", "", `return "fine " + config.n`))
	host := agenttest.NewHost()
	b := batch(host,
		call("loop", "loop", ""), call("n1", "fine", `{"n":1}`),
		call("huge", "huge", ""), call("n2", "fine", `{"n":2}`),
		call("hugevar", "hugevar", ""), call("n3", "fine", `{"n":3}`),
		call("recurse", "recurse", ""), call("n4", "fine", `{"n":4}`),
		call("publish", "publish", ""), call("n5", "fine", `{"n":5}`),
		call("bigargs", "bigargs", `{"pad":"`+strings.Repeat("z", 128*1024)+`"}`), call("n6", "fine", `{"n":6}`))
	// The wall time leaves a slow machine room for the calls that do finish.
	b.Limits = sandbox.Limits{WallTime: 2 * time.Second, MaxValueBytes: 64 * 1024}
	res, err := a.Execute(context.Background(), b)
	require.NoError(t, err)
	require.Len(t, res, 12)
	want := map[string]string{
		"loop": "wall_time limit", "huge": "max_value_bytes limit", "hugevar": "max_value_bytes limit",
		"recurse": "stack_depth", "publish": `capability "publish" is not granted`, "bigargs": "more than max_value_bytes",
	}
	for i := 0; i < len(res); i += 2 {
		bad, next := res[i], res[i+1]
		assert.True(t, bad.IsError, bad.ToolCallID)
		assert.Contains(t, bad.Content, want[bad.ToolCallID], bad.ToolCallID)
		assert.False(t, next.IsError, next.ToolCallID)
		assert.Equal(t, "fine "+next.ToolCallID[1:], next.Content)
	}
	assert.Empty(t, host.Envelopes(), "the refused publish never reached the host")
}

// A granted capability works from a tool: the batch's host ABI checks the
// agent's grants.
func TestExecuteGrantedCapability(t *testing.T) {
	t.Parallel()
	a := newAssembly(t, newJS(t), jsTool("publish", "", `host.publish("note", {n: config.n}); return "ok"`))
	host := agenttest.NewHost()
	b := batch(host, call("c1", "publish", `{"n":7}`))
	b.Run.Capabilities = []string{agent.CapPublish}
	res, err := a.Execute(context.Background(), b)
	require.NoError(t, err)
	assert.Equal(t, message.ToolResult{ToolCallID: "c1", Content: "ok"}, res[0])
	require.Equal(t, []string{"agent.run.run-1.custom.note"}, host.Subjects())
	assert.JSONEq(t, `{"n":7}`, string(host.Envelopes()[0].Payload))
}

// The batch's ABI, when given, is the one every call uses: the graph
// engine passes the node step's, which journals the run's clock reads.
func TestExecuteUsesBatchABI(t *testing.T) {
	t.Parallel()
	a := newAssembly(t, newJS(t), jsTool("now", "", `return typeof host.now().unix_ms`))
	host := &clockHost{Host: agenttest.NewHost(), t: time.Unix(1700000000, 0)}
	j := hostabi.NewJournal()
	b := batch(host, call("c1", "now", ""), call("c2", "now", ""))
	b.ABI = hostabi.NewDispatcher(hostabi.Config{Host: host, Run: b.Run, Node: "tools", Journal: j})
	res, err := a.Execute(context.Background(), b)
	require.NoError(t, err)
	assert.Equal(t, "number", res[0].Content)
	assert.False(t, res[1].IsError)
	entries := j.Entries()
	require.Len(t, entries, 2)
	assert.Equal(t, "now", entries[0].Func)
	assert.Equal(t, "tools", entries[0].Node)
}

// Execute fails as a whole when ctx ends or a tool signals an interrupt;
// a nil ctx is refused.
func TestExecuteBatchErrors(t *testing.T) {
	t.Parallel()
	a := newAssembly(t, newJS(t),
		jsTool("stop", "", `signal.interrupt("wait for me")`),
		jsTool("fine", "", `return 1`))
	_, err := a.Execute(context.Background(), batch(agenttest.NewHost(), call("c1", "fine", ""), call("c2", "stop", "")))
	require.ErrorIs(t, err, fault.Interrupted)
	assert.Contains(t, err.Error(), `tool "stop"`)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = a.Execute(ctx, batch(agenttest.NewHost(), call("c1", "fine", "")))
	require.ErrorIs(t, err, fault.Aborted)

	cause := fault.New(fault.Timeout, "run", "run_time limit")
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(cause)
	_, err = a.Execute(ctx, batch(agenttest.NewHost(), call("c1", "fine", "")))
	require.ErrorIs(t, err, cause, "the ctx's cause is kept")

	//nolint:staticcheck // a nil ctx is what this checks
	_, err = a.Execute(nil, batch(agenttest.NewHost()))
	require.ErrorIs(t, err, fault.Validation)
}

// A tool implemented by a WebAssembly module reaches its runtime as a
// sandbox.Script with the module and the entry; the arguments are its
// config and the board var result is its result, whatever the runtime.
func TestExecuteModuleTool(t *testing.T) {
	t.Parallel()
	wasm := &fakeRuntime{name: "wasm", fn: func(_ context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
		return sandbox.Outcome{Writes: sandbox.Writes{{Op: sandbox.SetVar, Name: "result", Value: map[string]any{"sum": inv.Config["a"].(float64) + inv.Config["b"].(float64)}}}}, nil
	}}
	s := tools.Settings{Limits: tools.LimitSettings{WallTime: "1s"}, Tools: []tools.ToolSettings{{Name: "add", Runtime: "wasm", Module: json.RawMessage(`{"file":"add.wasm"}`),
		Entry: "add", Parameters: json.RawMessage(`{"type":"object","required":["a","b"]}`)}}}
	a, err := tools.Factory().New(context.Background(), resourceInput(t, s, map[string]any{"script_runtime.wasm": wasm},
		map[string]string{"add.wasm": "\x00asm-bytes"}))
	require.NoError(t, err)
	b := batch(agenttest.NewHost(), call("c1", "add", `{"a":2,"b":3}`))
	b.Limits = sandbox.Limits{MaxEvents: 3, WallTime: 5 * time.Second}
	res, err := a.(tool.Assembly).Execute(context.Background(), b)
	require.NoError(t, err)
	assert.Equal(t, message.ToolResult{ToolCallID: "c1", Content: `{"sum":5}`}, res[0])
	invs := wasm.invocations()
	require.Len(t, invs, 1)
	assert.Equal(t, sandbox.Script{Name: "add", Module: []byte("\x00asm-bytes"), Entry: "add"}, invs[0].Script)
	assert.Equal(t, "tool", invs[0].Type)
	assert.Equal(t, "tools", invs[0].Node)
	assert.Equal(t, "run-1", invs[0].Run.RunID)
	assert.NotNil(t, invs[0].ABI)
	assert.Equal(t, sandbox.Limits{WallTime: time.Second, MaxEvents: 3}, invs[0].Limits,
		"the settings and the batch tighten; unset fields stay the runtime's own")
}

// clockHost adds a clock to a host.
type clockHost struct {
	agent.Host
	t time.Time
}

func (h *clockHost) Now() time.Time { return h.t }

// Text that is not UTF-8, from a runtime's result or a model's tool name,
// is repaired: the tool message must stay valid.
func TestExecuteRepairsUTF8(t *testing.T) {
	t.Parallel()
	raw := &fakeRuntime{name: "raw", fn: func(_ context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
		return sandbox.Outcome{Writes: sandbox.Writes{{Op: sandbox.SetVar, Name: "result", Value: "ok \xff"}}}, nil
	}}
	a, err := tools.New(context.Background(), tools.Settings{ScriptRuntimeName: "raw",
		Tools: []tools.ToolSettings{{Name: "t", Source: jsonString("x")}}}, map[string]sandbox.Runtime{"raw": raw})
	require.NoError(t, err)
	res, err := a.Execute(context.Background(), batch(agenttest.NewHost(),
		call("c1", "t", ""), call("c2", strings.Repeat("é", 40), "")))
	require.NoError(t, err)
	for _, r := range res {
		msg := message.Message{Role: message.RoleTool, Parts: []message.Part{message.ToolResultPart(r.ToolCallID, r.Content, r.IsError)}}
		require.NoError(t, msg.Validate(), r.Content)
	}
	assert.Equal(t, "ok \uFFFD", res[0].Content)
	assert.True(t, res[1].IsError)
}

// One assembly serves many batches at once.
func TestExecuteConcurrent(t *testing.T) {
	t.Parallel()
	a := newAssembly(t, newJS(t), jsTool("echo", "", `return config.n`))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				id := fmt.Sprintf("g%d-%d", g, i)
				res, err := a.Execute(context.Background(), batch(agenttest.NewHost(), call(id, "echo", fmt.Sprintf(`{"n":%d}`, i))))
				if err != nil || len(res) != 1 || res[0].ToolCallID != id || res[0].Content != fmt.Sprint(i) {
					errs <- fmt.Errorf("%s: %v %v", id, res, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
