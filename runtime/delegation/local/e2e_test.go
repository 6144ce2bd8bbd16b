package local_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation/hostwrap"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildApp builds testdata/delegation/deploy.yaml with the delegation
// service put on every turn host.
func buildApp(t testing.TB) *runtime.Runtime {
	t.Helper()
	doc, err := deploy.ParseFile(filepath.Join("..", "..", "..", "testdata", "delegation", "deploy.yaml"))
	require.NoError(t, err)
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), js.Factory(), graph.Factory())
	reg.MustRegister(local.Factories()...)
	b := runtime.NewBuilder(reg)
	require.NoError(t, b.WithResultHostFactory(hostwrap.Decorate))
	app, err := b.Build(context.Background(), doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	return app
}

// runTurn runs one turn of agentID in a fresh session and waits for it.
func runTurn(t testing.TB, app *runtime.Runtime, agentID, contextID, text string, sinks ...session.SinkSpec) *agent.Result {
	t.Helper()
	ctx := timeout(t)
	lease, err := app.Sessions().Open(ctx, session.Key{AgentID: agentID, ContextID: contextID})
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(ctx, agent.Request{Message: message.NewTextMessage(message.RoleUser, text)}, sinks...)
	require.NoError(t, err)
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	return res
}

func lastText(res *agent.Result) string {
	if len(res.Output) == 0 {
		return ""
	}
	return res.Output[len(res.Output)-1].Text()
}

// A graph agent whose script calls host.delegate runs another graph agent
// as a session turn; a sink on the parent turn sees the child's deltas as
// an observer, before the delegation returns.
//
// REF 6.2.4 (a sub-run is a real session turn with inherited sinks)
// REF 2.4.16 (inherited sinks are observers of the sub-run)
// REF 2.3.12 (the sub-run drains only its own, empty, queue)
func TestEndToEndDelegation(t *testing.T) {
	t.Parallel()
	app := buildApp(t)
	sink := &textSink{}
	res := runTurn(t, app, "lead", "c1", "tea", session.SinkSpec{ID: "console", Sink: sink,
		Visibility: session.VisibilityConfirmed, Authority: session.AuthorityAuthoritative})
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
	assert.Equal(t, "lead: draft (write about tea, steered 0)", lastText(res))
	assert.Equal(t, "succeeded", res.LastBoard.Vars["child_status"])
	assert.Regexp(t, `^run-[0-9a-f]{16}$`, res.LastBoard.Vars["child_run"])

	seen := sink.String()
	child := strings.Index(seen, "draft (write about tea, steered 0)")
	require.GreaterOrEqual(t, child, 0, "the parent's sink saw the child's delta: %q", seen)
	assert.Contains(t, seen, "[lead] ")
	assert.Greater(t, strings.Index(seen, "[lead done]"), child, "the child streamed before the delegation returned")
}

// REF 6.2.1 (through the delegate node type): the relay's delegate
// node hands its conversation to the writer and appends the reply.
func TestEndToEndDelegateNode(t *testing.T) {
	t.Parallel()
	app := buildApp(t)
	res := runTurn(t, app, "relay", "c1", "a haiku")
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
	assert.Equal(t, "draft (a haiku, steered 0)", lastText(res))
	assert.Equal(t, "draft (a haiku, steered 0)", res.LastBoard.Vars["answer"])
}

// A delegate call of an agent whose document does not grant delegate is
// PolicyDenied, and the script can catch it; max_depth stops an agent
// that delegates to itself.
//
// REF 6.2.3 (past max_depth: PolicyDenied)
func TestEndToEndRefusals(t *testing.T) {
	t.Parallel()
	app := buildApp(t)
	res := runTurn(t, app, "rogue", "c1", "go")
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
	assert.Equal(t, "policy_denied", lastText(res))

	res = runTurn(t, app, "nested", "c1", "0")
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
	assert.Equal(t, "3: policy_denied", lastText(res), "depths 1 to 3 ran; depth 4 was refused")
}

// Interrupting a turn whose script waits in host.delegate interrupts the
// sub-run too: the delegation ends canceled with an interrupted error, and
// the caller stops at the end of its wave as an interrupted run.
func TestEndToEndInterruptReachesSubRun(t *testing.T) {
	t.Parallel()
	app := buildApp(t)
	ctx := timeout(t)
	lease, err := app.Sessions().Open(ctx, session.Key{AgentID: "boss", ContextID: "c1"})
	require.NoError(t, err)
	defer lease.Close()
	sink := &textSink{}
	turn, err := lease.Session().Start(ctx, agent.Request{Message: message.NewTextMessage(message.RoleUser, "go")},
		session.SinkSpec{ID: "console", Sink: sink, Visibility: session.VisibilityRaw, Authority: session.AuthorityObserver})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(sink.String(), "looping") }, 20*time.Second, time.Millisecond,
		"the looper started")
	require.NoError(t, turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "stop"}))
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, agent.StatusInterrupted, res.Status, "%v", res.Err)
	assert.Equal(t, "canceled", res.LastBoard.Vars["child_status"])
	assert.Equal(t, "interrupted", res.LastBoard.Vars["child_error"])
	assert.NotContains(t, res.LastBoard.Vars, "after", "the caller stopped after the delegating wave")
}
