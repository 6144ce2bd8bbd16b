package runtime_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/session"
)

// benchDoc is a deployment of 20 resources (a bus, a tool assembly and a
// chain of 18 values, each depending on the one before) and one agent.
func benchDoc() string {
	var b strings.Builder
	b.WriteString("version: v1\nresources:\n  events: {kind: event.Bus, impl: memory}\n  tools: {kind: tool.Assembly, impl: test}\n")
	b.WriteString("  r00: {kind: test.Thing}\n")
	for i := 1; i < 18; i++ {
		fmt.Fprintf(&b, "  r%02d: {kind: test.Thing, deps: {dep: r%02d}}\n", i, i-1)
	}
	b.WriteString(`agents:
  bot:
    card: {name: Bot}
    engine: {kind: agent.Engine, impl: echo}
runtime:
  event_bus: events
  dynamic_catalog: {tools: {default: tools}}
`)
	return b.String()
}

// BenchmarkBuild is the baseline of BenchmarkReload: building the same
// 20-resource document into a runtime (and closing it).
func BenchmarkBuild(b *testing.B) {
	reg := testRegistry(b, nil)
	doc := parse(b, benchDoc())
	b.ReportAllocs()
	for b.Loop() {
		rt, err := runtime.NewBuilder(reg).Build(context.Background(), doc)
		if err != nil {
			b.Fatal(err)
		}
		if err := rt.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReload reloads the 20-resource document (ReloadConfig.Force, so that it
// is rebuilt) while 100 sessions are open and a registered agent is bound
// again each time; the retired generation is closed within the call.
func BenchmarkReload(b *testing.B) {
	reg := testRegistry(b, nil)
	doc := parse(b, benchDoc())
	ctx := context.Background()
	rt, err := runtime.NewBuilder(reg).Build(ctx, doc)
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.RegisterAgent(ctx, "qa", agent.Definition{
		Card: agent.AgentCard{Name: "QA"}, Engine: agent.EngineRef{Kind: "agent.Engine", Impl: "echo"},
	}); err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		lease, err := rt.Sessions().Open(ctx, session.Key{AgentID: "bot", ContextID: fmt.Sprintf("c%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		defer lease.Close()
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rt.ReloadWithConfig(ctx, doc, runtime.ReloadConfig{Force: true}); err != nil {
			b.Fatal(err)
		}
	}
}
