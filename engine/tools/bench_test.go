package tools_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/corral-rt/corral/sandbox"
)

// BenchmarkToolBatch compares a tool batch of two JavaScript tools with
// two script-node invocations of the same sources in the same runtime:
// the difference is what a tool call adds (argument decoding and schema
// validation, the return-value wrapper, reading the result). cpu-ns/op is
// the process's CPU time per op, steadier than ns/op on a busy machine.
//
//	go test -run='^$' -bench=BenchmarkToolBatch -benchtime=2000x ./engine/tools
func BenchmarkToolBatch(b *testing.B) {
	rt := newJS(b)
	const (
		weatherSrc = `board.setVar("result", {city: config.city, temp_c: 21})`
		addSrc     = `board.setVar("result", config.a + config.b)`
		addParams  = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`
	)
	asm := newAssembly(b, rt, jsTool("weather", cityParams, weatherSrc), jsTool("add", addParams, addSrc))
	host := agenttest.NewHost()
	run := agent.Run{ID: "run-1", AgentID: "bot"}
	info := sandbox.RunInfo{RunID: run.ID, AgentID: run.AgentID}
	ctx := context.Background()

	b.Run("script_nodes", func(b *testing.B) {
		nodes := []struct {
			id, src string
			config  map[string]any
		}{
			{"weather", weatherSrc, map[string]any{"city": "Oslo"}},
			{"add", addSrc, map[string]any{"a": 2.0, "b": 3.0}},
		}
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			for _, n := range nodes {
				abi := hostabi.NewDispatcher(hostabi.Config{Host: host, Run: run, Node: n.id})
				board := agent.NewBoard()
				err := sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: n.id, Type: "script", Script: sandbox.Script{Name: n.id, Source: n.src},
					Config: n.config, ABI: abi, Run: info}, board)
				if err != nil || board.Vars["result"] == nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("tool_batch", func(b *testing.B) {
		calls := []message.ToolCall{
			{ID: "c1", Name: "weather", Arguments: `{"city":"Oslo"}`},
			{ID: "c2", Name: "add", Arguments: `{"a":2,"b":3}`},
		}
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			abi := hostabi.NewDispatcher(hostabi.Config{Host: host, Run: run, Node: "tools"})
			res, err := asm.Execute(ctx, tool.Batch{Host: host, Run: run, Node: "tools", Calls: calls, ABI: abi})
			if err != nil || len(res) != 2 || res[0].IsError || res[1].IsError {
				b.Fatal(res, err)
			}
		}
	})
}

// reportCPU reports the process CPU time per op (cpu-ns/op) when the
// returned function runs: the figure to compare on a busy machine.
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if used := processCPU() - start; used > 0 && b.N > 0 {
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	}
}
