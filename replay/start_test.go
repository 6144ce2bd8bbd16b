package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// durableDice is the dice deployment with sessions that keep history and
// park interrupted runs, in a directory of its own.
func durableDice(t *testing.T) *deploy.Document {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/replay/dice")))
	data, err := os.ReadFile(filepath.Join(dir, "deploy.yaml"))
	require.NoError(t, err)
	text := strings.Replace(string(data), "    settings: {file: replies.yaml}\n", `    settings: {file: replies.yaml}
  files:
    kind: workspace.Workspace
    impl: local
    settings:
      root: ${base}/data
  checkpoints:
    kind: checkpoint.Store
    impl: workspace
    deps: {workspace: files}
`, 1)
	text = strings.Replace(text, "runtime:\n  event_bus: events\n", "runtime:\n  event_bus: events\n  checkpoint_store: checkpoints\n  sessions: {resume: true}\n", 1)
	require.NotEqual(t, string(data), text)
	file := filepath.Join(dir, "durable.yaml")
	require.NoError(t, os.WriteFile(file, []byte(text), 0o600))
	doc, err := deploy.ParseFile(file)
	require.NoError(t, err)
	return doc
}

// REF 10.1.6, REF 10.2.8: a turn that began with session history, and a
// resumed turn, record the state they started from, and replay from it
// identically; without it the replay diverges.
func TestReplayTurnWithHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	doc := durableDice(t)
	rec, lease := recordedSession(t, doc, replay.RecorderConfig{}, "dice")
	req := agent.Request{Message: message.NewTextMessage(message.RoleUser, "roll")}
	var interrupt func()
	ask := func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
		if interrupt != nil {
			interrupt()
		}
		return agent.UserReply{Parts: []message.Part{message.TextPart("Ada")}}, nil
	}
	run := func(start func() (*session.Turn, error), want agent.Status) *replay.Recording {
		t.Helper()
		turn, err := start()
		require.NoError(t, err)
		res, err := turn.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, want, res.Status)
		require.NoError(t, rec.Finish(turn.RunID(), req, res, err))
		r, ok := rec.Recording(turn.RunID())
		require.True(t, ok)
		again, err := replay.DecodeBytes(encoded(t, r))
		require.NoError(t, err)
		return again
	}
	startTurn := func() (*session.Turn, error) {
		return lease.Session().StartWithConfig(ctx, req, session.StartConfig{AskUser: ask})
	}
	first := run(startTurn, agent.StatusCompleted)
	assert.Nil(t, first.Header.Start, "the first turn starts from an empty session")
	second := run(startTurn, agent.StatusCompleted)
	require.NotNil(t, second.Header.Start)
	require.NotNil(t, second.Header.Start.History, "the second turn starts from the first's board")

	var turn *session.Turn
	started := make(chan struct{})
	interrupt = func() {
		<-started // turn is set
		_ = turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel})
	}
	parked := run(func() (*session.Turn, error) {
		var err error
		turn, err = lease.Session().StartWithConfig(ctx, req, session.StartConfig{AskUser: ask})
		close(started)
		return turn, err
	}, agent.StatusInterrupted)
	assert.NotNil(t, parked.Header.Start)
	interrupt = nil
	resumed := run(func() (*session.Turn, error) { return lease.Session().Resume(ctx) }, agent.StatusCompleted)
	require.NotNil(t, resumed.Header.Start)
	require.NotNil(t, resumed.Header.Start.Resume, "the resumed turn starts from the parked checkpoint")
	assert.Equal(t, parked.Header.RunID, resumed.Header.RunID)

	cfg := replay.Config{Document: doc, NewBuilder: builtin.NewBuilder}
	for name, r := range map[string]*replay.Recording{"first": first, "second": second, "parked": parked, "resumed": resumed} {
		rep, err := replay.Replay(ctx, r, cfg)
		require.NoError(t, err, name)
		assert.True(t, rep.Identical, "%s: %v", name, rep.Divergence)
	}
	for name, r := range map[string]*replay.Recording{"second": second, "resumed": resumed} {
		r.Header.Start = nil
		rep, err := replay.Replay(ctx, r, cfg)
		require.NoError(t, err, name)
		assert.False(t, rep.Identical, "%s replays from an empty session without its start", name)
	}
}
