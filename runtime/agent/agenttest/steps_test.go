package agenttest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
)

// execAsync runs e in a goroutine and returns a channel with its error.
func execAsync(ctx context.Context, e *agenttest.Engine, run agent.Run, host agent.Host) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := e.Execute(ctx, run, host, nil)
		done <- err
	}()
	return done
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(waitFor):
		t.Fatal("the engine did not return")
		return nil
	}
}

func TestEngineWaitInterrupt(t *testing.T) {
	t.Parallel()
	host := agenttest.NewHost()
	gate := agenttest.NewGate()
	e := agenttest.New(agenttest.Reply("a"), agenttest.WaitGate(gate), agenttest.WaitInterrupt(), agenttest.Reply("never"))
	done := execAsync(context.Background(), e, testRun("run-1"), host)
	<-gate.Reached()
	intr := agent.Interrupt{Cause: agent.CauseUserInput, Detail: "new turn"}
	require.True(t, host.Interrupt(intr))
	gate.Open()
	err := wait(t, done)

	var ie *agent.InterruptedError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, intr, ie.Interrupt)
	rec := e.Runs()[0]
	assert.Equal(t, []agent.Interrupt{intr}, rec.Interrupts)
	require.Len(t, rec.Checkpoints, 1, "an interrupt parks the run with a checkpoint")
	assert.Equal(t, 3, rec.Checkpoints[0].Board.Vars[agenttest.VarStep])
	assert.Equal(t, "a", agenttest.ReplyText(rec.Board.Channel(agent.MainChannel)))
	assert.NotContains(t, rec.Board.Vars, agenttest.VarStep, "the live board never carries the step")
	assert.True(t, rec.Done)
}

func TestEngineWaitInterruptEndsWithCtx(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		host agent.Host
	}{
		{"nil channel", agent.NoopHost{}},
		{"closed channel", &agent.HostFuncs{Inner: agent.NoopHost{}, InterruptsFn: func() <-chan agent.Interrupt {
			ch := make(chan agent.Interrupt)
			close(ch)
			return ch
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			done := execAsync(ctx, agenttest.New(agenttest.WaitInterrupt()), testRun("run-1"), tt.host)
			cancel()
			require.ErrorIs(t, wait(t, done), context.Canceled)
		})
	}
}

func TestEnginePollInterrupt(t *testing.T) {
	t.Parallel()
	host := agenttest.NewHost()
	e := agenttest.New(agenttest.PollInterrupt(), agenttest.Reply("a"),
		agenttest.Func(func(context.Context, *agenttest.Env) error {
			host.Interrupt(agent.Interrupt{Cause: agent.CauseCustom})
			return nil
		}),
		agenttest.PollInterrupt(), agenttest.Reply("never"))
	board, err := e.Execute(context.Background(), testRun("run-1"), host, nil)
	require.ErrorIs(t, err, fault.Interrupted)
	assert.Equal(t, "a", agenttest.ReplyText(board.Channel(agent.MainChannel)))
	assert.Equal(t, []string{"poll_interrupt", "reply", "func", "poll_interrupt"}, e.Runs()[0].Steps)

	_, err = agenttest.New(agenttest.PollInterrupt()).Execute(context.Background(), testRun("run-2"), agent.NoopHost{}, nil)
	require.NoError(t, err)
}

// noSteer hides every capability of its host.
type noSteer struct{ agent.Host }

func (noSteer) UnwrapHost() agent.Host { return nil }

func TestEngineDrainSteer(t *testing.T) {
	t.Parallel()
	host := agenttest.NewHost()
	host.Steer(message.NewTextMessage(message.RoleUser, "also this"), message.NewTextMessage(message.RoleUser, "and that"))
	e := agenttest.New(agenttest.DrainSteer(), agenttest.DrainSteer())
	board, err := e.Execute(context.Background(), testRun("run-1"), &agent.HostFuncs{Inner: host}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"also this", "and that"}, textsOf(board.Channel(agent.MainChannel)))
	assert.Equal(t, []string{"also this", "and that"}, textsOf(e.Runs()[0].Steered))
	assert.Nil(t, host.DrainSteer(), "draining is destructive")

	host.Steer(message.NewTextMessage(message.RoleUser, "unseen"))
	board, err = e.Execute(context.Background(), testRun("run-2"), noSteer{host}, nil)
	require.NoError(t, err)
	assert.Empty(t, board.Channel(agent.MainChannel), "no steer source, nothing drained")
}

func textsOf(msgs []message.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}

func TestEngineAskUser(t *testing.T) {
	t.Parallel()
	host := agenttest.NewHost()
	host.SetAskUser(func(_ context.Context, p agent.UserPrompt) (agent.UserReply, error) {
		return agent.UserReply{Parts: []message.Part{message.TextPart("yes, " + p.Parts[0].Text)}}, nil
	})
	e := agenttest.New(agenttest.AskUser("proceed?"))
	board, err := e.Execute(context.Background(), testRun("run-1"), host, nil)
	require.NoError(t, err)
	assert.Equal(t, "yes, proceed?", board.Vars[agenttest.VarReply])
	rec := e.Runs()[0]
	require.Len(t, rec.Prompts, 1)
	assert.Equal(t, agenttest.DefaultName, rec.Prompts[0].Source)
	require.Len(t, rec.Replies, 1)

	_, err = e.Execute(context.Background(), testRun("run-2"), agenttest.NewHost(), nil)
	require.ErrorIs(t, err, fault.NotAvailable, "the host's error ends the run")
}

func TestEngineResume(t *testing.T) {
	t.Parallel()
	host := agenttest.NewHost()
	e := agenttest.New(agenttest.Reply("a"), agenttest.Checkpoint(), agenttest.SetVar("late", 1), agenttest.Checkpoint(),
		agenttest.Fail(errors.New("crash")), agenttest.Reply("b"))
	_, err := e.Execute(context.Background(), testRun("run-1"), host, nil)
	require.EqualError(t, err, "crash")
	cps := host.Checkpoints()
	require.Len(t, cps, 2)
	assert.Equal(t, []int{1, 2}, []int{cps[0].Iteration, cps[1].Iteration})

	tests := []struct {
		name      string
		run       func() agent.Run
		wantErr   *fault.Kind
		wantSteps []string
	}{
		{"from the first checkpoint", func() agent.Run { r := testRun("run-1"); r.ResumeFrom = &cps[0]; return r },
			nil, []string{"set_var", "checkpoint", "poll_interrupt", "reply"}},
		{"from the last checkpoint", func() agent.Run { r := testRun("run-1"); r.ResumeFrom = &cps[1]; return r },
			nil, []string{"poll_interrupt", "reply"}},
		{"foreign checkpoint", func() agent.Run { r := testRun("run-2"); r.ResumeFrom = &cps[1]; return r },
			fault.Validation, nil},
		{"no board", func() agent.Run {
			r := testRun("run-1")
			r.ResumeFrom = &agent.Checkpoint{ExecID: "run-1"}
			return r
		}, fault.Validation, nil},
		{"step out of range", func() agent.Run {
			cp := cps[1].Clone()
			cp.Board.Vars[agenttest.VarStep] = 99
			r := testRun("run-1")
			r.ResumeFrom = &cp
			return r
		}, fault.Validation, nil},
		{"step missing", func() agent.Run {
			cp := cps[1].Clone()
			delete(cp.Board.Vars, agenttest.VarStep)
			r := testRun("run-1")
			r.ResumeFrom = &cp
			return r
		}, fault.Validation, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resumable := agenttest.NewScript(func(_ int, _ agent.Run) []agenttest.Step {
				return []agenttest.Step{agenttest.Reply("a"), agenttest.Checkpoint(), agenttest.SetVar("late", 1),
					agenttest.Checkpoint(), agenttest.PollInterrupt(), agenttest.Reply("b")}
			})
			h := agenttest.NewHost()
			board, err := resumable.Execute(context.Background(), tt.run(), h, nil)
			rec := resumable.Runs()[0]
			assert.Len(t, h.Subjects(), 2, "start and end are published for every outcome")
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.True(t, rec.Resumed)
			assert.Equal(t, "a\nb", agenttest.ReplyText(board.Channel(agent.MainChannel)), "the board comes from the checkpoint")
			assert.NotContains(t, board.Vars, agenttest.VarStep)
			assert.Equal(t, tt.wantSteps, rec.Steps)
			if len(rec.Checkpoints) > 0 {
				assert.Equal(t, 2, rec.Checkpoints[0].Iteration, "iterations continue from the checkpoint")
			}
		})
	}
}

func TestEngineCheckpointErrorIsRecorded(t *testing.T) {
	t.Parallel()
	host := agenttest.NewHost()
	host.SetCheckpointError(errors.New("store down"))
	e := agenttest.New(agenttest.Checkpoint(), agenttest.Reply("a"))
	_, err := e.Execute(context.Background(), testRun("run-1"), host, nil)
	require.NoError(t, err, "a failed checkpoint does not fail the run")
	rec := e.Runs()[0]
	require.Len(t, rec.CheckpointErrors, 1)
	assert.Empty(t, rec.Checkpoints)
}

func TestGate(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	select {
	case <-g.Reached():
		t.Fatal("reached before any engine ran")
	case <-g.Opened():
		t.Fatal("open before Open")
	default:
	}
	host := agenttest.NewHost()
	e := agenttest.New(agenttest.WaitGate(g), agenttest.Reply("after"))
	done := execAsync(context.Background(), e, testRun("run-1"), host)
	<-g.Reached()
	assert.False(t, e.Runs()[0].Done, "parked at the gate")
	g.Open()
	g.Open()
	require.NoError(t, wait(t, done))
	<-g.Opened()
	// An open gate lets later runs through at once.
	_, err := e.Execute(context.Background(), testRun("run-2"), host, nil)
	require.NoError(t, err)

	_, err = agenttest.New(agenttest.WaitGate(nil)).Execute(context.Background(), testRun("run-3"), host, nil)
	require.ErrorIs(t, err, fault.Internal)
}

func TestEngineScriptAndRecords(t *testing.T) {
	t.Parallel()
	e := agenttest.NewScript(func(call int, run agent.Run) []agenttest.Step {
		return []agenttest.Step{agenttest.Reply(fmt.Sprintf("call %d attempt %d", call, run.Attempt))}
	})
	host := agenttest.NewHost()
	for i := 1; i <= 2; i++ {
		run := testRun(fmt.Sprintf("run-%d", i))
		run.Attempt = i
		board, err := e.Execute(context.Background(), run, host, nil)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("call %d attempt %d", i, i), agenttest.ReplyText(board.Channel(agent.MainChannel)))
	}
	runs := e.Runs()
	require.Len(t, runs, 2)
	assert.Equal(t, []int{1, 2}, []int{runs[0].Call, runs[1].Call})
	assert.Equal(t, "run-2", runs[1].Run.ID)
	runs[0].Board.Vars["x"] = 1
	runs[0].Steps[0] = "changed"
	assert.NotContains(t, e.Runs()[0].Board.Vars, "x", "Runs returns copies")
	assert.Equal(t, "reply", e.Runs()[0].Steps[0])

	copyE := e.WithName("other")
	assert.Equal(t, "other", copyE.Name())
	assert.Empty(t, copyE.Runs(), "a configured copy records its own runs")
	assert.Equal(t, agenttest.DefaultName, e.WithName("").Name())
	_, err := agenttest.NewScript(nil).Execute(context.Background(), testRun("run-3"), host, nil)
	require.NoError(t, err)
}

func TestEngineConcurrentRuns(t *testing.T) {
	t.Parallel()
	e := agenttest.New(agenttest.Say("x"), agenttest.Checkpoint(), agenttest.DrainSteer(), agenttest.Reply("y"))
	host := agenttest.NewHost()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			_, err := e.Execute(context.Background(), testRun(fmt.Sprintf("run-%d", i)), host, nil)
			assert.NoError(t, err)
		})
		wg.Go(func() { _ = e.Runs() })
	}
	wg.Wait()
	assert.Len(t, e.Runs(), 16)
	assert.Len(t, host.Checkpoints(), 16)
}

func TestFactory(t *testing.T) {
	t.Parallel()
	e := agenttest.New(agenttest.Reply("x"))
	f := agenttest.Factory("scripted", e)
	assert.Equal(t, resource.Spec{Kind: "agent.Engine", Impl: "scripted"}, f.Spec())
	reg := resource.NewRegistry()
	require.NoError(t, reg.Register(f))

	v, err := f.New(context.Background(), resource.Input{Name: "bot"})
	require.NoError(t, err)
	assert.Same(t, e, v)
	_, ok := v.(agent.Engine)
	assert.True(t, ok)

	_, err = f.New(context.Background(), resource.Input{Name: "bot", Settings: []byte(`{"steps": 1}`)})
	require.ErrorIs(t, err, fault.Validation)
	_, err = agenttest.Factory("nil", nil).New(context.Background(), resource.Input{})
	require.ErrorIs(t, err, fault.Validation)
}

func TestEngineWithExecute(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (the scripted engine under agent.Execute: interrupted, canceled and completed runs)
	tests := []struct {
		name   string
		steps  []agenttest.Step
		status agent.Status
		output string
	}{
		{"completed", []agenttest.Step{agenttest.Say("hello")}, agent.StatusCompleted, "hello"},
		{"interrupted", []agenttest.Step{agenttest.Say("part"), agenttest.PollInterrupt()}, agent.StatusInterrupted, "part"},
		{"failed", []agenttest.Step{agenttest.Say("x"), agenttest.Fail(fault.New(fault.BudgetExceeded, "x", "y"))}, agent.StatusFailed, "x"},
		{"usage", []agenttest.Step{agenttest.ReportUsage(agent.Usage{TotalTokens: 7}), agenttest.Reply("ok")}, agent.StatusCompleted, "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			host := agenttest.NewHost()
			host.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel})
			bot := &agent.Agent{ID: "bot", Engine: agenttest.New(tt.steps...)}
			res, err := agent.Execute(context.Background(), bot, host, agent.Request{RunID: "run-1",
				Message: message.NewTextMessage(message.RoleUser, "q")})
			require.NoError(t, err)
			assert.Equal(t, tt.status, res.Status)
			assert.Equal(t, tt.output, agenttest.ReplyText(res.Output))
			assert.Equal(t, host.Subjects()[len(host.Subjects())-1], "agent.run.run-1.end")
			if tt.name == "usage" {
				assert.Equal(t, int64(7), res.Usage.TotalTokens)
			}
		})
	}
}
