package agenttest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
)

const waitFor = 10 * time.Second

func testRun(id string) agent.Run {
	return agent.Run{ID: id, AgentID: "bot", Attempt: 1, StartedAt: time.Now()}
}

func runPayload(t *testing.T, env event.Envelope) event.RunPayload {
	t.Helper()
	var p event.RunPayload
	require.NoError(t, env.Decode(&p))
	return p
}

func TestEngineRunStartAndEnd(t *testing.T) {
	t.Parallel()
	// REF 5.7.1 (run.start right after setup)
	// REF 5.7.3 (payload and headers graph_id, agent_id, run_id)
	tests := []struct {
		name  string
		steps []agenttest.Step
		err   string
	}{
		{"completed", []agenttest.Step{agenttest.Reply("hi")}, ""},
		{"failed", []agenttest.Step{agenttest.Fail(errors.New("boom"))}, "boom"},
		{"no steps", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			host := agenttest.NewHost()
			_, err := agenttest.New(tt.steps...).Execute(context.Background(), testRun("run-1"), host, nil)
			envs := host.Envelopes()
			require.Len(t, envs, 2)
			assert.Equal(t, event.SubjectRunStart("run-1"), envs[0].Subject)
			assert.Equal(t, event.SubjectRunEnd("run-1"), envs[1].Subject)
			for _, env := range envs {
				assert.Equal(t, "run-1", env.Header(event.HeaderRunID))
				assert.Equal(t, "bot", env.Header(event.HeaderAgentID))
				assert.Equal(t, agenttest.DefaultName, env.Header(event.HeaderGraphID))
			}
			assert.Equal(t, event.RunPayload{Graph: agenttest.DefaultName}, runPayload(t, envs[0]))
			assert.Equal(t, event.RunPayload{Graph: agenttest.DefaultName, Error: tt.err}, runPayload(t, envs[1]))
			if tt.err == "" {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, tt.err)
			}
		})
	}
}

func TestEngineRunEndOnCancel(t *testing.T) {
	t.Parallel()
	// REF 5.7.2 (run.end is deferred, on a ctx detached from cancellation, once per Execute)
	host := agenttest.NewHost()
	var endCtxErr error
	host.SetPublishError(func(ctx context.Context, env event.Envelope) error {
		if env.Subject == event.SubjectRunEnd("run-1") {
			endCtxErr = ctx.Err()
			_, hasDeadline := ctx.Deadline()
			assert.True(t, hasDeadline, "the run-end publish is bounded")
		}
		return nil
	})
	gate := agenttest.NewGate()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := agenttest.New(agenttest.WaitGate(gate), agenttest.Reply("never")).Execute(ctx, testRun("run-1"), host, nil)
		done <- err
	}()
	<-gate.Reached()
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(waitFor):
		t.Fatal("the engine did not stop")
	}
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, endCtxErr)
	assert.Equal(t, []string{event.SubjectRunStart("run-1"), event.SubjectRunEnd("run-1")}, host.Subjects())
	assert.Equal(t, context.Canceled.Error(), runPayload(t, host.Envelopes()[1]).Error)
}

func TestEngineRunEndFailures(t *testing.T) {
	t.Parallel()
	// REF 5.7.4 (a failed run-end publish is joined with an Internal RunEndPublishError)
	refused := errors.New("refused")
	host := agenttest.NewHost()
	host.SetPublishError(func(_ context.Context, env event.Envelope) error {
		if env.Subject == event.SubjectRunEnd("run-1") {
			return refused
		}
		return nil
	})
	_, err := agenttest.New(agenttest.Reply("x")).Execute(context.Background(), testRun("run-1"), host, nil)
	var rep *agent.RunEndPublishError
	require.ErrorAs(t, err, &rep)
	assert.Equal(t, "run-1", rep.RunID)
	assert.ErrorIs(t, err, refused)
	assert.ErrorIs(t, err, fault.Internal)

	// WithRunEndFailure publishes nothing and reports the failure.
	host = agenttest.NewHost()
	e := agenttest.New(agenttest.Fail(fault.New(fault.Timeout, "x", "slow"))).WithRunEndFailure(refused)
	_, err = e.Execute(context.Background(), testRun("run-2"), host, nil)
	require.ErrorAs(t, err, &rep)
	assert.ErrorIs(t, err, refused)
	assert.ErrorIs(t, err, fault.Timeout, "the run's own error is kept")
	assert.Equal(t, []string{event.SubjectRunStart("run-2")}, host.Subjects())
	_, err = agenttest.New().WithRunEndFailure(nil).Execute(context.Background(), testRun("run-3"), host, nil)
	require.ErrorAs(t, err, &rep)

	// WithoutRunEnd publishes no run end and reports nothing.
	host = agenttest.NewHost()
	_, err = agenttest.New(agenttest.Reply("x")).WithoutRunEnd().Execute(context.Background(), testRun("run-4"), host, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{event.SubjectRunStart("run-4")}, host.Subjects())
}

func TestEngineStartPublishFailureIsRecorded(t *testing.T) {
	t.Parallel()
	// REF 5.7.1 (a failed run.start publish is only recorded)
	host := agenttest.NewHost()
	host.SetPublishError(func(_ context.Context, env event.Envelope) error {
		if env.Subject == event.SubjectRunStart("run-1") {
			return errors.New("no bus")
		}
		return nil
	})
	e := agenttest.New(agenttest.Reply("x"))
	_, err := e.Execute(context.Background(), testRun("run-1"), host, nil)
	require.NoError(t, err)
	runs := e.Runs()
	require.Len(t, runs, 1)
	require.Len(t, runs[0].PublishErrors, 1)
	assert.EqualError(t, runs[0].PublishErrors[0], "no bus")
}

func TestEngineStreamDeltas(t *testing.T) {
	t.Parallel()
	// REF 4.4.1 (the actor is SanitiseID(<agentID>.node.<nodeID>))
	// REF 4.4.3 (stream delta payloads: part, speculative, branch accept and cancel)
	custom := event.StreamDeltaPayload{Type: event.DeltaFinish, FinishReason: "stop"}
	e := agenttest.New(
		agenttest.Emit("he"),
		agenttest.Speculative("f1", "b1", "maybe"),
		agenttest.AcceptBranch("f1", "b1"),
		agenttest.CancelBranch("f1", "b2"),
		agenttest.EmitDelta(custom),
		agenttest.Say("hello"),
		agenttest.Publish("custom.progress", map[string]int{"pct": 50}),
	).WithName("scripted")
	run := testRun("run-1")
	run.ParentRunID = "run-parent"
	host := agenttest.NewHost()
	board, err := e.Execute(context.Background(), run, host, nil)
	require.NoError(t, err)
	envs := host.Envelopes()
	require.Len(t, envs, 9)
	deltaSubject := event.SubjectStreamDelta("run-1", event.Actor("bot", "scripted"))
	assert.Equal(t, "agent.run.run-1.stream.bot_node_scripted.delta", deltaSubject)

	want := []event.StreamDeltaPayload{
		{Type: event.DeltaPart, Part: textPart("he")},
		{Type: event.DeltaPart, Part: textPart("maybe"), Speculative: true, ForkID: "f1", BranchID: "b1"},
		{Type: event.DeltaParallelBranchAccept, ForkID: "f1", BranchID: "b1"},
		{Type: event.DeltaParallelBranchCancel, ForkID: "f1", BranchID: "b2"},
		custom,
		{Type: event.DeltaPart, Part: textPart("hello")},
	}
	for i, w := range want {
		env := envs[i+1]
		assert.Equal(t, deltaSubject, env.Subject)
		assert.True(t, event.IsStreamDelta(env.Subject))
		assert.Equal(t, "scripted", env.Header(event.HeaderNodeID))
		assert.Equal(t, "run-parent", env.Header(event.HeaderParentRunID))
		var got event.StreamDeltaPayload
		require.NoError(t, env.Decode(&got))
		assert.Equal(t, w, got)
		require.NoError(t, got.Validate())
	}
	assert.Equal(t, "agent.run.run-1.custom.progress", envs[7].Subject)
	assert.JSONEq(t, `{"pct":50}`, string(envs[7].Payload))
	assert.Equal(t, "scripted", runPayload(t, envs[8]).Graph)
	assert.Equal(t, "hello", agenttest.ReplyText(board.Channel(agent.MainChannel)))
}

func textPart(s string) *message.Part {
	p := message.TextPart(s)
	return &p
}

func TestEngineInvalidPublish(t *testing.T) {
	t.Parallel()
	host := agenttest.NewHost()
	_, err := agenttest.New(agenttest.Publish("bad..subject", nil), agenttest.Reply("never")).
		Execute(context.Background(), testRun("run-1"), host, nil)
	require.ErrorIs(t, err, event.ErrInvalidSubject)
}

func TestEngineBoardSteps(t *testing.T) {
	t.Parallel()
	board := agent.NewBoard()
	board.Append(agent.MainChannel, message.NewTextMessage(message.RoleUser, "q"))
	out, err := agenttest.New(agenttest.SetVar("k", "v"), agenttest.Reply("a"), agenttest.Reply("b"), agenttest.Step{}).
		Execute(context.Background(), testRun("run-1"), agenttest.NewHost(), board)
	require.NoError(t, err)
	assert.Same(t, board, out)
	assert.Equal(t, "v", out.Vars["k"])
	assert.Equal(t, "a\nb", agenttest.ReplyText(out.Channel(agent.MainChannel)))

	_, err = agenttest.New().Execute(context.Background(), testRun("run-1"), nil, board)
	require.ErrorIs(t, err, fault.Validation)
}

func TestEngineFailAndFunc(t *testing.T) {
	t.Parallel()
	_, err := agenttest.New(agenttest.Fail(nil)).Execute(context.Background(), testRun("run-1"), agenttest.NewHost(), nil)
	require.ErrorIs(t, err, fault.Internal)

	e := agenttest.New(agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
		assert.Equal(t, 0, env.Step())
		assert.Equal(t, "run-1", env.Run().ID)
		assert.NotNil(t, env.Host())
		b := env.Board().Clone()
		b.Vars["replaced"] = true
		env.SetBoard(b)
		env.SetBoard(nil)
		return env.Publish(ctx, "custom.x", nil)
	}))
	out, err := e.Execute(context.Background(), testRun("run-1"), agenttest.NewHost(), nil)
	require.NoError(t, err)
	assert.Equal(t, true, out.Vars["replaced"])
	assert.Equal(t, []string{"func"}, e.Runs()[0].Steps)
}

func TestEngineChecksCtxBetweenSteps(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	e := agenttest.New(agenttest.Reply("a"), agenttest.Func(func(context.Context, *agenttest.Env) error {
		cancel()
		return nil
	}), agenttest.Reply("b"))
	board, err := e.Execute(ctx, testRun("run-1"), agenttest.NewHost(), nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "a", agenttest.ReplyText(board.Channel(agent.MainChannel)))
	assert.Equal(t, []string{"reply", "func"}, e.Runs()[0].Steps)
}

func TestEngineHang(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	host := agenttest.NewHost()
	done := make(chan error, 1)
	e := agenttest.New(agenttest.Hang())
	go func() {
		_, err := e.Execute(ctx, testRun("run-1"), host, nil)
		done <- err
	}()
	host.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}) // ignored by Hang
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(waitFor):
		t.Fatal("Hang did not return when ctx ended")
	}
}

func TestEngineUsage(t *testing.T) {
	t.Parallel()
	host := agenttest.NewHost()
	u := agent.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}
	host.SetUsageError(errors.New("meter offline"))
	_, err := agenttest.New(agenttest.ReportUsage(u)).Execute(context.Background(), testRun("run-1"), host, nil)
	require.NoError(t, err, "only BudgetExceeded stops the run")
	host.SetUsageError(fault.New(fault.BudgetExceeded, "usage", "spent"))
	_, err = agenttest.New(agenttest.ReportUsage(u), agenttest.Reply("never")).Execute(context.Background(), testRun("run-2"), host, nil)
	require.ErrorIs(t, err, fault.BudgetExceeded)
	assert.Equal(t, []agent.Usage{u, u}, host.Usage())
}

func TestEngineCheckpointJSON(t *testing.T) {
	t.Parallel()
	host := agenttest.NewHost()
	run := testRun("run-1")
	_, err := agenttest.New(agenttest.Reply("a"), agenttest.Checkpoint()).Execute(context.Background(), run, host, nil)
	require.NoError(t, err)
	cps := host.Checkpoints()
	require.Len(t, cps, 1)
	cp := cps[0]
	require.NoError(t, cp.Validate())
	assert.Equal(t, "run-1", cp.ExecID)
	assert.Equal(t, 1, cp.Iteration)
	assert.Equal(t, []string{"step-1"}, cp.Steps)
	assert.Equal(t, agenttest.DefaultName, cp.SpecVersion)
	assert.True(t, cp.OriginalStartedAt.Equal(run.StartedAt))
	assert.Equal(t, 2, cp.Board.Vars[agenttest.VarStep])

	// A checkpoint that went through JSON resumes too.
	raw, err := json.Marshal(cp)
	require.NoError(t, err)
	var decoded agent.Checkpoint
	require.NoError(t, json.Unmarshal(raw, &decoded))
	run.ResumeFrom = &decoded
	e := agenttest.New(agenttest.Reply("a"), agenttest.Checkpoint(), agenttest.Reply("b"))
	board, err := e.Execute(context.Background(), run, host, nil)
	require.NoError(t, err)
	assert.Equal(t, "a\nb", agenttest.ReplyText(board.Channel(agent.MainChannel)))
	assert.Equal(t, 2, e.Runs()[0].StartStep)
}
