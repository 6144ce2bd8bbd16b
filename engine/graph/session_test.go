package graph_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wait is how long the end-to-end tests wait for anything: generous, as a
// slow machine must not fail them.
const wait = 30 * time.Second

// concierge builds the concierge deployment and returns it with a channel
// of the prompt ids it asks.
func concierge(t *testing.T) (*runtime.Runtime, <-chan string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(testdata, "concierge"))
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(dir, "deploy.yaml"))
	require.NoError(t, err)
	src = []byte(strings.ReplaceAll(string(src), "WORKSPACE_ROOT", t.TempDir()))
	doc, err := deploy.ParseWithConfig(src, deploy.ParseConfig{Filename: "deploy.yaml", BaseDir: dir})
	require.NoError(t, err)
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), js.Factory(), graph.Factory(), workspace.Factory(), checkpoint.Factory())
	app, err := runtime.NewBuilder(reg).Build(context.Background(), doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })

	prompts := make(chan string, 8)
	detach, err := app.Attach(context.Background(), session.PatternPromptRequested(),
		event.SinkFunc(func(_ context.Context, env event.Envelope) error {
			var p session.PromptRequested
			if err := env.Decode(&p); err != nil {
				return err
			}
			prompts <- p.PromptID
			return nil
		}))
	require.NoError(t, err)
	t.Cleanup(detach)
	return app, prompts
}

// textSink collects the text of a turn's stream deltas.
type textSink struct {
	mu   sync.Mutex
	text strings.Builder
}

func (s *textSink) OnDelta(_ context.Context, _ event.Envelope, d event.StreamDeltaPayload) error {
	if d.Type == event.DeltaPart && d.Part != nil {
		s.mu.Lock()
		s.text.WriteString(d.Part.Text)
		s.mu.Unlock()
	}
	return nil
}

func (s *textSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.text.String()
}

func nextPrompt(t *testing.T, prompts <-chan string) string {
	t.Helper()
	select {
	case id := <-prompts:
		return id
	case <-time.After(wait):
		t.Fatal("the graph never asked the user")
		return ""
	}
}

func reply(text string) agent.UserReply {
	return agent.UserReply{Parts: []message.Part{message.TextPart(text)}}
}

// A deployed graph agent in a session: its script nodes stream deltas,
// ask the user and take the reply, and drain a message steered to the turn
// while it waited.
func TestSessionSteerAndAsk(t *testing.T) {
	t.Parallel()
	// REF 5.3.3 (script nodes through the session's host)
	// REF 5.4 (the canonical steer node: board.appendChannel(board.MAIN_CHANNEL, host.drainSteer()))
	// REF 5.7.2 (the session sees run end: the turn settles)
	app, prompts := concierge(t)
	lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "concierge", ContextID: "steer"})
	require.NoError(t, err)
	defer lease.Close()
	sink := &textSink{}
	turn, err := lease.Session().Start(context.Background(),
		agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")}, session.SinkSpec{ID: "console", Sink: sink})
	require.NoError(t, err)

	id := nextPrompt(t, prompts)
	require.NoError(t, turn.Steer(message.NewTextMessage(message.RoleUser, "I like tea")), "steered while the prompt waits")
	require.NoError(t, turn.Reply(context.Background(), id, reply("Ada")))

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
	want := "Nice to meet you, Ada. You said: I like tea"
	require.Len(t, res.Output, 1)
	assert.Equal(t, want, res.Output[0].Text())
	assert.Equal(t, "Hello! "+want, sink.String())
	assert.Equal(t, 0, turn.PendingSteer(), "the steer node drained the queue")
}

// An interrupted run parks at its last checkpoint; Resume continues from
// there under the same run id, without re-running the nodes before it.
func TestSessionInterruptAndResume(t *testing.T) {
	t.Parallel()
	// REF 5.5.1 (the node that watches the host stops at the interrupt)
	// REF 5.5.2 (an interrupted run reports Status=interrupted, not committed)
	// REF 5.5.3 (resume from the checkpoint: restored board, successors of its steps)
	app, prompts := concierge(t)
	lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "concierge", ContextID: "resume"})
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(context.Background(), agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")})
	require.NoError(t, err)

	nextPrompt(t, prompts)
	require.NoError(t, turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "later"}))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StatusInterrupted, res.Status, "%v", res.Err)
	assert.False(t, res.Committed)
	assert.Equal(t, "ask", res.LastBoard.Vars[graph.VarInterruptedNode])

	runID, ok, err := lease.Session().Resumable(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, turn.RunID(), runID)

	sink := &textSink{}
	resumed, err := lease.Session().Resume(ctx, session.SinkSpec{ID: "console", Sink: sink})
	require.NoError(t, err)
	assert.Equal(t, runID, resumed.RunID())
	require.NoError(t, resumed.Reply(ctx, nextPrompt(t, prompts), reply("Grace")))
	res, err = resumed.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
	assert.True(t, res.Committed)
	want := "Nice to meet you, Grace. You said: hi"
	require.Len(t, res.Output, 1)
	assert.Equal(t, want, res.Output[0].Text())
	assert.Equal(t, want, sink.String(), "greet did not run again")
	assert.EqualValues(t, 1, res.LastBoard.Vars["greet_runs"])
	assert.NotContains(t, res.LastBoard.Vars, graph.VarInterruptedNode)
	_, ok, err = lease.Session().Resumable(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "nothing is parked once the resumed run committed")
}

// A turn interrupted while a JavaScript node spins ends interrupted, at
// once rather than at the node's wall time, and is resumable.
func TestSessionInterruptStopsASpinningNode(t *testing.T) {
	t.Parallel()
	// REF 5.5.1 (a node still running interrupt_grace after the interrupt is stopped)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "graph.yaml"), []byte(`
name: spinner
entry: greet
nodes:
  - {id: greet, type: script, config: {source: 'board.setVar("greeted", true)'}}
  - {id: spin, type: script, config: {source: 'host.emit("part", {type: "text", text: "spinning"}); for (;;) {}'}}
edges: [{from: greet, to: spin}]
`), 0o600))
	src := `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  js: {kind: sandbox.Runtime, impl: js, settings: {limits: {wall_time: 10m}}}
  files: {kind: workspace.Workspace, impl: local, settings: {root: ` + strconv.Quote(t.TempDir()) + `}}
  checkpoints: {kind: checkpoint.Store, impl: workspace, deps: {workspace: files}}
agents:
  spinner:
    card: {name: Spinner}
    capabilities: [emit, interrupt]
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js}
      settings: {graph: {file: graph.yaml}, build: {interrupt_grace: 20ms}}
runtime:
  event_bus: events
  checkpoint_store: checkpoints
  sessions: {resume: true}
`
	doc, err := deploy.ParseWithConfig([]byte(src), deploy.ParseConfig{Filename: "deploy.yaml", BaseDir: dir})
	require.NoError(t, err)
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), js.Factory(), graph.Factory(), workspace.Factory(), checkpoint.Factory())
	app, err := runtime.NewBuilder(reg).Build(context.Background(), doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "spinner", ContextID: "c"})
	require.NoError(t, err)
	defer lease.Close()
	sink := &textSink{}
	turn, err := lease.Session().Start(context.Background(), agent.Request{Message: message.NewTextMessage(message.RoleUser, "go")},
		session.SinkSpec{ID: "s", Sink: sink})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return sink.String() == "spinning" }, wait, time.Millisecond, "the spin node runs")
	require.NoError(t, turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "enough"}))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StatusInterrupted, res.Status, "%v", res.Err)
	assert.Equal(t, "spin", res.LastBoard.Vars[graph.VarInterruptedNode])
	_, ok, err := lease.Session().Resumable(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "the run is parked at greet's checkpoint")
}
