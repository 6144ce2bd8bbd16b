package agent_test

import (
	"context"
	"errors"
	"math"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// replyEngine appends one assistant message with text to the main channel
// and returns err.
func replyEngine(text string, err error) agent.Engine {
	return agent.EngineFunc(func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
		b.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, text))
		return b, err
	})
}

func userReq(text string) agent.Request {
	return agent.Request{Message: message.NewTextMessage(message.RoleUser, text)}
}

func newAgent(e agent.Engine) *agent.Agent {
	return &agent.Agent{ID: "bot", Engine: e}
}

func finalizeReason(res *agent.Result) any { return res.State[agent.StateFinalizeReason] }

func TestExecuteRunID(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (1: mint the run id; req.RunID wins)
	var seen []string
	eng := agent.EngineFunc(func(_ context.Context, run agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
		seen = append(seen, run.ID)
		return b, nil
	})
	ctx := context.Background()

	res, err := agent.Execute(ctx, newAgent(eng), agent.NoopHost{}, agent.Request{RunID: "run-given"})
	require.NoError(t, err)
	assert.Equal(t, "run-given", res.RunID)

	res, err = agent.Execute(ctx, newAgent(eng), agent.NoopHost{}, agent.Request{})
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^run-[0-9a-f]{16}$`), res.RunID)

	res, err = agent.ExecuteWithConfig(ctx, newAgent(eng), agent.NoopHost{}, agent.Request{},
		agent.ExecuteConfig{NewRunID: func() string { return "run-generated" }})
	require.NoError(t, err)
	assert.Equal(t, "run-generated", res.RunID)

	res, err = agent.ExecuteWithConfig(ctx, newAgent(eng), agent.NoopHost{}, agent.Request{RunID: "run-wins"},
		agent.ExecuteConfig{NewRunID: func() string { return "run-generated" }})
	require.NoError(t, err)
	assert.Equal(t, "run-wins", res.RunID)
	require.Len(t, seen, 4)
	assert.Equal(t, "run-given", seen[0], "the engine runs under the result's run id")
	assert.Equal(t, "run-wins", seen[3])

	_, err = agent.ExecuteWithConfig(ctx, newAgent(eng), agent.NoopHost{}, agent.Request{},
		agent.ExecuteConfig{NewRunID: func() string { return " " }})
	require.ErrorIs(t, err, fault.Internal)
	assert.NotEqual(t, agent.NewRunID(), agent.NewRunID())
}

func TestExecuteDefaultBoard(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (2: by default the message goes to the main channel and inputs become vars)
	var got *agent.Board
	eng := agent.EngineFunc(func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
		got = b.Clone()
		if nested, ok := b.Vars["nested"].(map[string]any); ok {
			nested["k"] = "changed by the engine"
		}
		return b, nil
	})
	inputs := map[string]any{"topic": "goats", "nested": map[string]any{"k": "v"}}
	req := userReq("hi")
	req.Inputs = inputs
	_, err := agent.Execute(context.Background(), newAgent(eng), agent.NoopHost{}, req)
	require.NoError(t, err)
	require.Len(t, got.Channel(agent.MainChannel), 1)
	assert.Equal(t, "hi", got.Channel(agent.MainChannel)[0].Text())
	assert.Equal(t, "goats", got.Vars["topic"])
	assert.Equal(t, "v", inputs["nested"].(map[string]any)["k"], "the request's inputs are copied, not shared")

	// A zero message means "no message".
	_, err = agent.Execute(context.Background(), newAgent(eng), agent.NoopHost{}, agent.Request{Inputs: map[string]any{"x": 1}})
	require.NoError(t, err)
	assert.Empty(t, got.Channel(agent.MainChannel))
	assert.Equal(t, 1, got.Vars["x"])
}

func TestExecuteHookOrder(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (2: preparers build the board, in order, instead of the default)
	// REF 6.1.6 (3: observers see the board before the engine runs)
	var mu sync.Mutex
	var calls []string
	note := func(s string) { mu.Lock(); calls = append(calls, s); mu.Unlock() }
	prep := func(name string) agent.Preparer {
		return agent.PreparerFunc(func(_ context.Context, run agent.Run, req agent.Request, b *agent.Board) error {
			note("prepare " + name + " " + req.RunID)
			b.Append(agent.MainChannel, message.NewTextMessage(message.RoleSystem, name))
			return nil
		})
	}
	obs := func(name string) agent.Observer {
		return agent.ObserverFunc(func(_ context.Context, _ agent.Run, b *agent.Board) {
			note("observe " + name + " " + b.Channel(agent.MainChannel)[1].Text())
		})
	}
	eng := agent.EngineFunc(func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
		note("engine")
		return b, nil
	})
	a := &agent.Agent{ID: "bot", Engine: eng,
		Preparers: []agent.Preparer{prep("p1"), nil, prep("p2")},
		Observers: []agent.Observer{obs("o1"), obs("o2")},
	}
	res, err := agent.Execute(context.Background(), a, agent.NoopHost{}, agent.Request{RunID: "run-1", Message: message.NewTextMessage(message.RoleUser, "ignored")})
	require.NoError(t, err)
	assert.Equal(t, []string{"prepare p1 run-1", "prepare p2 run-1", "observe o1 p2", "observe o2 p2", "engine"}, calls)
	assert.Len(t, res.LastBoard.Channel(agent.MainChannel), 2, "preparers replace the default seeding")
}

func TestExecuteDefaultPreparer(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (2: the default seeding, reusable by a preparer)
	b := agent.NewBoard()
	req := userReq("hello")
	req.Inputs = map[string]any{"a": []any{"x"}}
	require.NoError(t, agent.DefaultPreparer{}.Prepare(context.Background(), agent.Run{}, req, b))
	assert.Equal(t, "hello", b.Channel(agent.MainChannel)[0].Text())
	b.Vars["a"].([]any)[0] = "y"
	assert.Equal(t, "x", req.Inputs["a"].([]any)[0])
	require.ErrorIs(t, agent.DefaultPreparer{}.Prepare(context.Background(), agent.Run{}, req, nil), fault.Internal)
}

func TestExecuteInfrastructureErrors(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (infrastructure failures return (nil, err))
	ok := replyEngine("x", nil)
	var typedNilHost *agent.HostFuncs
	badPrep := func(err error) *agent.Agent {
		return &agent.Agent{ID: "bot", Engine: ok, Preparers: []agent.Preparer{agent.PreparerFunc(
			func(context.Context, agent.Run, agent.Request, *agent.Board) error { return err })}}
	}
	cp := &agent.Checkpoint{ExecID: "run-a", Board: agent.NewBoard()}
	tests := []struct {
		name string
		ctx  context.Context
		a    *agent.Agent
		host agent.Host
		req  agent.Request
		cfg  agent.ExecuteConfig
		kind *fault.Kind
	}{
		{"nil ctx", nil, newAgent(ok), agent.NoopHost{}, userReq("x"), agent.ExecuteConfig{}, fault.Validation},
		{"nil agent", context.Background(), nil, agent.NoopHost{}, userReq("x"), agent.ExecuteConfig{}, fault.Validation},
		{"nil host", context.Background(), newAgent(ok), nil, userReq("x"), agent.ExecuteConfig{}, fault.Validation},
		{"typed nil host", context.Background(), newAgent(ok), typedNilHost, userReq("x"), agent.ExecuteConfig{}, fault.Validation},
		{"no engine", context.Background(), newAgent(nil), agent.NoopHost{}, userReq("x"), agent.ExecuteConfig{}, fault.Validation},
		{"invalid message", context.Background(), newAgent(ok), agent.NoopHost{},
			agent.Request{Message: message.Message{Role: "robot", Parts: []message.Part{message.TextPart("x")}}}, agent.ExecuteConfig{}, fault.Validation},
		{"invalid checkpoint", context.Background(), newAgent(ok), agent.NoopHost{}, userReq("x"),
			agent.ExecuteConfig{ResumeFrom: &agent.Checkpoint{ExecID: "run-a"}}, fault.Validation},
		{"foreign checkpoint", context.Background(), newAgent(ok), agent.NoopHost{}, agent.Request{RunID: "run-b"},
			agent.ExecuteConfig{ResumeFrom: cp}, fault.Validation},
		{"preparer error keeps its kind", context.Background(), badPrep(fault.New(fault.NotFound, "history", "gone")),
			agent.NoopHost{}, userReq("x"), agent.ExecuteConfig{}, fault.NotFound},
		{"preparer error without kind", context.Background(), badPrep(errors.New("boom")),
			agent.NoopHost{}, userReq("x"), agent.ExecuteConfig{}, fault.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			called := false
			cfg := tt.cfg
			cfg.OnRunEnd = func(*agent.Result) { called = true }
			res, err := agent.ExecuteWithConfig(tt.ctx, tt.a, tt.host, tt.req, cfg)
			require.ErrorIs(t, err, tt.kind)
			assert.Nil(t, res)
			assert.False(t, called, "OnRunEnd runs only with a result")
		})
	}
}

func TestExecuteClassify(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (4: run the engine) (5: classify: completed, interrupted, canceled, failed or aborted)
	canceledCtx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name      string
		ctx       context.Context
		err       error
		status    agent.Status
		committed bool
	}{
		{"nil error", context.Background(), nil, agent.StatusCompleted, true},
		{"interrupted", context.Background(), agent.Interrupted(agent.Interrupt{Cause: agent.CauseUserInput}), agent.StatusInterrupted, false},
		{"wrapped interrupted", context.Background(), fault.Wrap(fault.Internal, agent.Interrupted(agent.Interrupt{}), "x", ""), agent.StatusInterrupted, false},
		{"context canceled", context.Background(), context.Canceled, agent.StatusCanceled, false},
		{"aborted wrapping a cancel", context.Background(), fault.Wrap(fault.Aborted, context.Canceled, "graph", ""), agent.StatusCanceled, false},
		{"any error on a canceled ctx", canceledCtx, errors.New("lost"), agent.StatusCanceled, false},
		{"aborted", context.Background(), fault.New(fault.Aborted, "graph", "stop"), agent.StatusAborted, false},
		{"timeout", context.Background(), fault.New(fault.Timeout, "graph", "slow"), agent.StatusFailed, false},
		{"deadline", context.Background(), context.DeadlineExceeded, agent.StatusFailed, false},
		{"budget", context.Background(), fault.New(fault.BudgetExceeded, "graph", "too many"), agent.StatusFailed, false},
		{"plain error", context.Background(), errors.New("boom"), agent.StatusFailed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := agent.Execute(tt.ctx, newAgent(replyEngine("out", tt.err)), agent.NoopHost{}, userReq("hi"))
			require.NoError(t, err, "business outcomes return (res, nil)")
			assert.Equal(t, tt.status, res.Status)
			assert.Equal(t, tt.committed, res.Committed)
			assert.Equal(t, string(tt.status), finalizeReason(res))
			assert.Equal(t, 1, res.Attempts)
			if tt.err == nil {
				assert.NoError(t, res.Err)
			} else {
				assert.ErrorIs(t, res.Err, tt.err)
			}
			require.Len(t, res.Output, 1)
			assert.Equal(t, "out", res.Output[0].Text())
		})
	}
}

func TestExecuteOutput(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (5: Output is the assistant messages the final attempt appended)
	history := agent.PreparerFunc(func(_ context.Context, _ agent.Run, req agent.Request, b *agent.Board) error {
		b.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, "old answer"))
		return agent.DefaultPreparer{}.Prepare(context.Background(), agent.Run{}, req, b)
	})
	tests := []struct {
		name string
		eng  agent.EngineFunc
		want []string
	}{
		{"appended in place", func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
			b.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, "a"),
				message.NewTextMessage(message.RoleUser, "steered"), message.NewTextMessage(message.RoleAssistant, "b"))
			return b, nil
		}, []string{"a", "b"}},
		{"nil board returned", func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
			b.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, "c"))
			return nil, nil
		}, []string{"c"}},
		{"new board returned", func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
			out := b.Clone()
			out.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, "d"))
			return out, nil
		}, []string{"d"}},
		{"channel shrunk", func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
			return agent.NewBoard(), nil
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := &agent.Agent{ID: "bot", Engine: tt.eng, Preparers: []agent.Preparer{history}}
			res, err := agent.Execute(context.Background(), a, agent.NoopHost{}, userReq("q"))
			require.NoError(t, err)
			var got []string
			for _, m := range res.Output {
				got = append(got, m.Text())
			}
			assert.Equal(t, tt.want, got)
			if len(res.Output) > 0 {
				res.Output[0].Parts[0].Text = "changed"
				assert.NotContains(t, texts(res.LastBoard.Channel(agent.MainChannel)), "changed", "Output is a copy")
			}
		})
	}
}

func texts(msgs []message.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Text()
	}
	return out
}

// usageHost counts usage and offers a steer source.
type usageHost struct {
	agent.NoopHost
	mu    sync.Mutex
	calls int
}

func (h *usageHost) ReportUsage(context.Context, agent.Usage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	return fault.New(fault.BudgetExceeded, "usage", "over budget")
}

func (h *usageHost) DrainSteer() []message.Message { return nil }

func TestExecuteUsageAndHost(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (4: the engine runs with the host; its capabilities stay reachable)
	host := &usageHost{}
	var budgetErrs, steerFound int
	eng := agent.EngineFunc(func(ctx context.Context, run agent.Run, h agent.Host, b *agent.Board) (*agent.Board, error) {
		if errors.Is(h.ReportUsage(ctx, agent.Usage{InputTokens: 3, OutputTokens: 2, TotalTokens: 5}), fault.BudgetExceeded) {
			budgetErrs++
		}
		if _, ok := agent.SteerFromHost(h); ok {
			steerFound++
		}
		return b, nil
	})
	a := &agent.Agent{ID: "bot", Engine: eng, Definition: agent.Definition{Policy: agent.Policy{MaxRevise: 1}}}
	revise := agent.RefereeFunc(func(context.Context, agent.Run, *agent.Result) (agent.Verdict, error) {
		return agent.Verdict{Revise: true}, nil
	})
	res, err := agent.ExecuteWithConfig(context.Background(), a, host, userReq("x"), agent.ExecuteConfig{Referees: []agent.Referee{revise}})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Attempts)
	assert.Equal(t, agent.Usage{InputTokens: 6, OutputTokens: 4, TotalTokens: 10}, res.Usage, "usage adds up over attempts")
	assert.Equal(t, 2, host.calls)
	assert.Equal(t, 2, budgetErrs, "the host's answer reaches the engine")
	assert.Equal(t, 2, steerFound)
}

func TestExecuteRunFields(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (4: run the engine with the run's identity)
	var got agent.Run
	eng := agent.EngineFunc(func(_ context.Context, run agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
		got = run
		return b, nil
	})
	before := time.Now()
	req := userReq("x")
	req.ContextID = "c1"
	_, err := agent.ExecuteWithConfig(context.Background(), newAgent(replyEngine("unused", nil)), agent.NoopHost{}, req,
		agent.ExecuteConfig{Engine: eng, ParentRunID: "run-parent"})
	require.NoError(t, err)
	assert.Equal(t, "bot", got.AgentID)
	assert.Equal(t, "c1", got.ContextID)
	assert.Equal(t, "run-parent", got.ParentRunID)
	assert.Equal(t, 1, got.Attempt)
	assert.Nil(t, got.ResumeFrom)
	assert.False(t, got.StartedAt.Before(before))
}

func TestExecuteResume(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (2: a resume seeds the board from the checkpoint)
	// REF 2.6.4 (the engine gets ExecuteConfig.ResumeFrom and the ResumeContext)
	original := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	parked := agent.NewBoard()
	parked.Append(agent.MainChannel, message.NewTextMessage(message.RoleUser, "q"),
		message.NewTextMessage(message.RoleAssistant, "before the interrupt"))
	parked.Vars["step"] = 2
	cp := &agent.Checkpoint{ExecID: "run-parked", Board: parked, Iteration: 3, OriginalStartedAt: original.Add(time.Second)}

	type seen struct {
		run    agent.Run
		board  *agent.Board
		resume agent.ResumeContext
		ok     bool
	}
	var runs []seen
	eng := agent.EngineFunc(func(ctx context.Context, run agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
		rc, ok := agent.ResumeFromContext(ctx)
		runs = append(runs, seen{run, b.Clone(), rc, ok})
		if run.ResumeFrom != nil {
			run.ResumeFrom.Board.Vars["step"] = 99 // the engine's copy only
		}
		b.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, "after"))
		return b, nil
	})
	prepared := 0
	a := &agent.Agent{ID: "bot", Engine: eng, Definition: agent.Definition{Policy: agent.Policy{MaxRevise: 1}},
		Preparers: []agent.Preparer{agent.PreparerFunc(func(ctx context.Context, r agent.Run, req agent.Request, b *agent.Board) error {
			prepared++
			return agent.DefaultPreparer{}.Prepare(ctx, r, req, b)
		})}}
	reviseOnce := agent.RefereeFunc(func(_ context.Context, run agent.Run, _ *agent.Result) (agent.Verdict, error) {
		return agent.Verdict{Revise: run.Attempt == 1}, nil
	})
	rc := agent.ResumeContext{Attempt: 2, Signal: "resume", StartedAt: original}
	res, err := agent.ExecuteWithConfig(context.Background(), a, agent.NoopHost{}, userReq("q"),
		agent.ExecuteConfig{ResumeFrom: cp, ResumeContext: &rc, Referees: []agent.Referee{reviseOnce}})
	require.NoError(t, err)
	assert.Equal(t, "run-parked", res.RunID, "the checkpoint's exec id names the run")
	require.Len(t, runs, 2)

	first := runs[0]
	require.NotNil(t, first.run.ResumeFrom)
	assert.Equal(t, 3, first.run.ResumeFrom.Iteration)
	assert.Equal(t, []string{"q", "before the interrupt"}, texts(first.board.Channel(agent.MainChannel)))
	assert.Equal(t, 2, first.board.Vars["step"])
	assert.Equal(t, 2, cp.Board.Vars["step"], "the caller's checkpoint is not shared")
	assert.True(t, first.ok)
	assert.Equal(t, rc, first.resume)
	assert.Equal(t, original, first.run.StartedAt)

	second := runs[1]
	assert.Nil(t, second.run.ResumeFrom, "a revise attempt is a fresh run")
	assert.Equal(t, []string{"q"}, texts(second.board.Channel(agent.MainChannel)))
	assert.Equal(t, 1, prepared, "preparers run on the revise attempt only")
	assert.Equal(t, original, second.run.StartedAt)
	assert.Equal(t, []string{"after"}, texts(res.Output))

	// Without a ResumeContext the checkpoint's original start is used.
	runs = nil
	_, err = agent.ExecuteWithConfig(context.Background(), &agent.Agent{ID: "bot", Engine: eng}, agent.NoopHost{}, agent.Request{RunID: "run-parked"},
		agent.ExecuteConfig{ResumeFrom: cp})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, cp.OriginalStartedAt, runs[0].run.StartedAt)
	assert.False(t, runs[0].ok)
	assert.Equal(t, []string{"q", "before the interrupt"}, texts(runs[0].board.Channel(agent.MainChannel)),
		"a resume does not append the request message again")
}

func TestRunEndPublishError(t *testing.T) {
	t.Parallel()
	// REF 5.7.4 (a failed run-end publish is an Internal RunEndPublishError)
	cause := errors.New("bus closed")
	err := errors.Join(context.Canceled, &agent.RunEndPublishError{RunID: "run-1", Err: cause})
	assert.ErrorIs(t, err, fault.Internal)
	assert.ErrorIs(t, err, cause)
	var rep *agent.RunEndPublishError
	require.ErrorAs(t, err, &rep)
	assert.Equal(t, "run-1", rep.RunID)
	assert.Contains(t, err.Error(), "publish run end of run-1: bus closed")
	assert.ErrorIs(t, &agent.RunEndPublishError{RunID: "r"}, fault.Internal)
	assert.Equal(t, "publish run end of r: failed", (&agent.RunEndPublishError{RunID: "r"}).Error())
}

func TestExecuteWithHistory(t *testing.T) {
	t.Parallel()
	// REF 2.6.3: a fresh run seeds its board from the stored history;
	// the new message lands on top and the history itself is not changed.
	history := agent.NewBoard()
	history.Append(agent.MainChannel,
		message.NewTextMessage(message.RoleUser, "earlier"),
		message.NewTextMessage(message.RoleAssistant, "earlier answer"))
	history.Vars["topic"] = "billing"
	res, err := agent.ExecuteWithConfig(context.Background(), newAgent(replyEngine("now", nil)), agent.NoopHost{}, userReq("again"),
		agent.ExecuteConfig{History: history})
	require.NoError(t, err)
	main := res.LastBoard.Channel(agent.MainChannel)
	require.Len(t, main, 4)
	assert.Equal(t, []string{"earlier", "earlier answer", "again", "now"},
		[]string{main[0].Text(), main[1].Text(), main[2].Text(), main[3].Text()})
	assert.Equal(t, "billing", res.LastBoard.Vars["topic"])
	require.Len(t, res.Output, 1, "output holds only what this run added")
	assert.Equal(t, "now", res.Output[0].Text())
	assert.Len(t, history.Channel(agent.MainChannel), 2, "the caller's history is not modified")
}

// The run's usage saturates instead of wrapping: reported counts near
// math.MaxInt64 cannot bring the total back to a small number.
func TestExecuteUsageSaturates(t *testing.T) {
	t.Parallel()
	eng := agent.EngineFunc(func(ctx context.Context, _ agent.Run, h agent.Host, b *agent.Board) (*agent.Board, error) {
		for _, n := range []int64{12345, math.MaxInt64, math.MaxInt64 - 12345 + 2} {
			_ = h.ReportUsage(ctx, agent.Usage{InputTokens: n, TotalTokens: n})
		}
		return b, nil
	})
	a := &agent.Agent{ID: "bot", Engine: eng}
	res, err := agent.Execute(context.Background(), a, agent.NoopHost{}, userReq("x"))
	require.NoError(t, err)
	assert.Equal(t, agent.Usage{InputTokens: math.MaxInt64, TotalTokens: math.MaxInt64}, res.Usage)
}
