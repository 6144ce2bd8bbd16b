package graph_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/engine/scripted"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/stretchr/testify/require"
)

// scriptedProvider builds a scripted provider from YAML settings.
func scriptedProvider(t testing.TB, settings string) *scripted.Provider {
	t.Helper()
	raw, err := resource.YAMLToJSON([]byte(settings))
	require.NoError(t, err)
	s, err := scripted.Parse(raw)
	require.NoError(t, err)
	p, err := scripted.New(s)
	require.NoError(t, err)
	return p
}

// fakeTools is a tool assembly that lists tools and counts Execute calls;
// it never runs anything.
type fakeTools struct {
	mu    sync.Mutex
	defs  []tool.Definition
	execs int
}

var _ tool.Assembly = (*fakeTools)(nil)

func newFakeTools(names ...string) *fakeTools {
	f := &fakeTools{}
	for _, n := range names {
		f.defs = append(f.defs, tool.Definition{Name: n, Description: "the " + n + " tool",
			Parameters: []byte(`{"type":"object","properties":{"q":{"type":"string"}}}`)})
	}
	return f
}

func (f *fakeTools) Definitions() []tool.Definition { return append([]tool.Definition(nil), f.defs...) }

func (f *fakeTools) Execute(context.Context, tool.Batch) ([]message.ToolResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execs++
	return nil, fault.New(fault.Internal, "fake tools", "an inference node must never execute tools")
}

func (f *fakeTools) executions() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execs
}

// recordingProvider records the requests it gets and answers with a
// fixed reply.
type recordingProvider struct {
	mu   sync.Mutex
	reqs []model.Request
	resp model.Response
}

func (p *recordingProvider) Generate(_ context.Context, req model.Request, _ func(model.Delta) error) (model.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, req)
	return p.resp, nil
}

func (p *recordingProvider) requests() []model.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]model.Request(nil), p.reqs...)
}

// failingProvider fails every call: a replay must never reach it.
type failingProvider struct{}

func (failingProvider) Generate(context.Context, model.Request, func(model.Delta) error) (model.Response, error) {
	return model.Response{}, fault.New(fault.Internal, "failing provider", "called during a replay")
}

// journalHost is a recording host that hands the engine a journal and,
// when replay is set, answers inference nodes from it.
type journalHost struct {
	*agenttest.Host
	journal *hostabi.Journal
	replay  *graph.JournalReplay
}

var _ graph.JournalProvider = (*journalHost)(nil)

func (h *journalHost) Journal() *hostabi.Journal { return h.journal }

// UnwrapHost exposes the recording host; ReplayInference is found on h.
func (h *journalHost) UnwrapHost() agent.Host { return h.Host }

// replayingHost is a journalHost that replays.
type replayingHost struct{ *journalHost }

func (h replayingHost) ReplayInference(node string, args json.RawMessage) (graph.InferenceRecord, error) {
	return h.replay.ReplayInference(node, args)
}

// boardWith returns a board whose main channel holds msgs.
func boardWith(msgs ...message.Message) *agent.Board {
	b := agent.NewBoard()
	b.Append(agent.MainChannel, msgs...)
	return b
}
