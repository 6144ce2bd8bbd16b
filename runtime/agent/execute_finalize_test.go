package agent_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

func verdict(v agent.Verdict) agent.Referee {
	return agent.RefereeFunc(func(context.Context, agent.Run, *agent.Result) (agent.Verdict, error) { return v, nil })
}

func TestExecuteReviseLoop(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (policy.max_revise bounds referee re-runs; each attempt re-seeds the board; Attempts counts them)
	tests := []struct {
		name      string
		maxRevise int
		reviseTil int // the referee asks to revise while attempt < reviseTil
		attempts  int
		reason    string
	}{
		{"no revise asked", 2, 1, 1, agent.FinalizeCompleted},
		{"one revise", 2, 2, 2, agent.FinalizeCompleted},
		{"budget used up exactly", 2, 3, 3, agent.FinalizeCompleted},
		{"budget exhausted", 2, 99, 3, agent.FinalizeReviseExhausted},
		{"no budget", 0, 99, 1, agent.FinalizeReviseExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var attempts []int
			var seededLens []int
			eng := agent.EngineFunc(func(_ context.Context, run agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
				attempts = append(attempts, run.Attempt)
				seededLens = append(seededLens, len(b.Channel(agent.MainChannel)))
				b.Vars["dirty"] = true
				b.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, fmt.Sprintf("draft %d", run.Attempt)))
				return b, nil
			})
			a := &agent.Agent{ID: "bot", Engine: eng, Definition: agent.Definition{Policy: agent.Policy{MaxRevise: tt.maxRevise}},
				Referees: []agent.Referee{agent.RefereeFunc(func(_ context.Context, run agent.Run, res *agent.Result) (agent.Verdict, error) {
					assert.Equal(t, run.Attempt, res.Attempts)
					return agent.Verdict{Revise: run.Attempt < tt.reviseTil, Reason: "too short"}, nil
				})}}
			res, err := agent.Execute(context.Background(), a, agent.NoopHost{}, userReq("q"))
			require.NoError(t, err)
			assert.Equal(t, tt.attempts, res.Attempts)
			assert.Len(t, attempts, tt.attempts)
			for i := range attempts {
				assert.Equal(t, i+1, attempts[i])
				assert.Equal(t, 1, seededLens[i], "every attempt starts from a freshly seeded board")
			}
			assert.Equal(t, []string{fmt.Sprintf("draft %d", tt.attempts)}, texts(res.Output), "Output is the final attempt's")
			assert.Len(t, res.LastBoard.Channel(agent.MainChannel), 2)
			assert.True(t, res.Committed)
			assert.Equal(t, tt.reason, finalizeReason(res))
			assert.Equal(t, "too short", res.State[agent.StateRefereeReason])
		})
	}
}

func TestExecuteReviseOnlyCompleted(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (revise re-runs only a completed attempt)
	calls := 0
	eng := agent.EngineFunc(func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
		calls++
		return b, errors.New("boom")
	})
	a := &agent.Agent{ID: "bot", Engine: eng, Definition: agent.Definition{Policy: agent.Policy{MaxRevise: 3}}}
	res, err := agent.ExecuteWithConfig(context.Background(), a, agent.NoopHost{}, userReq("q"),
		agent.ExecuteConfig{Referees: []agent.Referee{verdict(agent.Verdict{Revise: true})}})
	require.NoError(t, err)
	assert.Equal(t, 1, calls)
	assert.Equal(t, agent.StatusFailed, res.Status)
	assert.Equal(t, agent.FinalizeFailed, finalizeReason(res))
}

func TestExecuteRefereeVerdicts(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (6: referees accept or discard; Committed defaults to true only for completed)
	interrupted := agent.Interrupted(agent.Interrupt{Cause: agent.CauseUserCancel})
	tests := []struct {
		name      string
		runErr    error
		verdicts  []agent.Verdict
		status    agent.Status
		committed bool
		reason    string
	}{
		{"no opinion on completed", nil, []agent.Verdict{{}}, agent.StatusCompleted, true, agent.FinalizeCompleted},
		{"no opinion on interrupted", interrupted, []agent.Verdict{{}}, agent.StatusInterrupted, false, agent.FinalizeInterrupted},
		{"accept an interrupted run", interrupted, []agent.Verdict{{Accept: true}}, agent.StatusInterrupted, true, agent.FinalizeRefereeAccept},
		{"accept a failed run", errors.New("x"), []agent.Verdict{{}, {Accept: true}}, agent.StatusFailed, true, agent.FinalizeRefereeAccept},
		{"discard a completed run", nil, []agent.Verdict{{Discard: true}}, agent.StatusCompleted, false, agent.FinalizeRefereeDiscard},
		{"discard beats accept", nil, []agent.Verdict{{Accept: true}, {Discard: true}}, agent.StatusCompleted, false, agent.FinalizeRefereeDiscard},
		{"accept with revise and no budget", nil, []agent.Verdict{{Revise: true}, {Accept: true}}, agent.StatusCompleted, true, agent.FinalizeRefereeAccept},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			committed := 0
			a := &agent.Agent{ID: "bot", Engine: replyEngine("out", tt.runErr),
				Committers: []agent.Committer{agent.CommitterFunc(func(context.Context, agent.Run, *agent.Result) error {
					committed++
					return nil
				})}}
			var cfg agent.ExecuteConfig
			for _, v := range tt.verdicts {
				cfg.Referees = append(cfg.Referees, verdict(v))
			}
			res, err := agent.ExecuteWithConfig(context.Background(), a, agent.NoopHost{}, userReq("q"), cfg)
			require.NoError(t, err)
			assert.Equal(t, tt.status, res.Status)
			assert.Equal(t, tt.committed, res.Committed)
			assert.Equal(t, tt.reason, finalizeReason(res))
			assert.Equal(t, map[bool]int{true: 1, false: 0}[tt.committed], committed, "committers run only on a committed result")
		})
	}
}

func TestExecuteRefereeOrder(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (6: referees: the agent's, then the config's; each sees the classified result)
	var order []string
	ref := func(name string) agent.Referee {
		return agent.RefereeFunc(func(_ context.Context, _ agent.Run, res *agent.Result) (agent.Verdict, error) {
			order = append(order, fmt.Sprintf("%s %s %v", name, res.Status, res.Committed))
			return agent.Verdict{Reason: name}, nil
		})
	}
	a := &agent.Agent{ID: "bot", Engine: replyEngine("x", nil), Referees: []agent.Referee{ref("a1"), nil, ref("a2")}}
	res, err := agent.ExecuteWithConfig(context.Background(), a, agent.NoopHost{}, userReq("q"),
		agent.ExecuteConfig{Referees: []agent.Referee{ref("o1"), nil, ref("o2")}})
	require.NoError(t, err)
	assert.Equal(t, []string{"a1 completed true", "a2 completed true", "o1 completed true", "o2 completed true"}, order)
	assert.Equal(t, "a1", res.State[agent.StateRefereeReason], "the first reason is kept")
}

func TestExecuteRefereeError(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (6: a referee error leaves the result uncommitted; a completed result becomes failed)
	refErr := fault.New(fault.NotAvailable, "judge", "offline")
	tests := []struct {
		name   string
		runErr error
		status agent.Status
	}{
		{"completed becomes failed", nil, agent.StatusFailed},
		{"canceled stays canceled", context.Canceled, agent.StatusCanceled},
		{"interrupted stays interrupted", agent.Interrupted(agent.Interrupt{}), agent.StatusInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			later, committed := false, false
			a := &agent.Agent{ID: "bot", Engine: replyEngine("x", tt.runErr), Definition: agent.Definition{Policy: agent.Policy{MaxRevise: 3}},
				Referees: []agent.Referee{
					verdict(agent.Verdict{Accept: true, Revise: true}),
					agent.RefereeFunc(func(context.Context, agent.Run, *agent.Result) (agent.Verdict, error) { return agent.Verdict{}, refErr }),
					agent.RefereeFunc(func(context.Context, agent.Run, *agent.Result) (agent.Verdict, error) {
						later = true
						return agent.Verdict{}, nil
					}),
				},
				Committers: []agent.Committer{agent.CommitterFunc(func(context.Context, agent.Run, *agent.Result) error {
					committed = true
					return nil
				})}}
			res, err := agent.Execute(context.Background(), a, agent.NoopHost{}, userReq("q"))
			require.NoError(t, err)
			assert.Equal(t, tt.status, res.Status)
			assert.False(t, res.Committed)
			assert.Equal(t, 1, res.Attempts, "a referee error is final")
			assert.ErrorIs(t, res.Err, refErr)
			assert.ErrorIs(t, res.Err, fault.NotAvailable)
			if tt.runErr != nil {
				assert.ErrorIs(t, res.Err, tt.runErr)
			}
			assert.Equal(t, agent.FinalizeRefereeError, finalizeReason(res))
			assert.Contains(t, res.State[agent.StateRefereeError], "offline")
			assert.False(t, later, "the first error stops the judging")
			assert.False(t, committed)
		})
	}
}

func TestExecuteCommitView(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (6: the commit view may rewrite the result before the committers)
	var committedText []string
	a := &agent.Agent{ID: "bot", Engine: replyEngine("the whole answer", nil),
		Committers: []agent.Committer{agent.CommitterFunc(func(_ context.Context, _ agent.Run, res *agent.Result) error {
			committedText = texts(res.Output)
			return nil
		})}}
	view := agent.CommitViewFunc(func(_ context.Context, _ agent.Run, res *agent.Result) error {
		res.Output = []message.Message{message.NewTextMessage(message.RoleAssistant, "the whole")}
		return nil
	})
	res, err := agent.ExecuteWithConfig(context.Background(), a, agent.NoopHost{}, userReq("q"), agent.ExecuteConfig{CommitView: view})
	require.NoError(t, err)
	assert.True(t, res.Committed)
	assert.Equal(t, []string{"the whole"}, texts(res.Output))
	assert.Equal(t, []string{"the whole"}, committedText)

	// A failing view leaves the result uncommitted, keeps the status, and skips the committers.
	committedText = nil
	viewErr := fault.New(fault.Conflict, "commit view", "prefix does not match")
	bad := agent.CommitViewFunc(func(context.Context, agent.Run, *agent.Result) error { return viewErr })
	res, err = agent.ExecuteWithConfig(context.Background(), a, agent.NoopHost{}, userReq("q"), agent.ExecuteConfig{CommitView: bad})
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, res.Status)
	assert.False(t, res.Committed)
	assert.ErrorIs(t, res.Err, fault.Conflict)
	assert.Equal(t, agent.FinalizeCommitViewFailed, finalizeReason(res))
	assert.Contains(t, res.State[agent.StateCommitError], "prefix does not match")
	assert.Nil(t, committedText)

	// The view is not asked about an uncommitted result.
	asked := false
	watch := agent.CommitViewFunc(func(context.Context, agent.Run, *agent.Result) error { asked = true; return nil })
	_, err = agent.ExecuteWithConfig(context.Background(), newAgent(replyEngine("x", errors.New("boom"))), agent.NoopHost{}, userReq("q"),
		agent.ExecuteConfig{CommitView: watch})
	require.NoError(t, err)
	assert.False(t, asked)
}

func TestExecuteCommitterFailure(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (6: a failed committer forces Committed false)
	var calls []string
	committer := func(name string, err error) agent.Committer {
		return agent.CommitterFunc(func(context.Context, agent.Run, *agent.Result) error {
			calls = append(calls, name)
			return err
		})
	}
	a := &agent.Agent{ID: "bot", Engine: replyEngine("x", nil),
		Committers: []agent.Committer{committer("c1", nil), committer("c2", errors.New("disk full")), committer("c3", nil)}}
	ended := 0
	res, err := agent.ExecuteWithConfig(context.Background(), a, agent.NoopHost{}, userReq("q"),
		agent.ExecuteConfig{OnRunEnd: func(r *agent.Result) {
			ended++
			assert.False(t, r.Committed, "OnRunEnd sees the final result")
		}})
	require.NoError(t, err)
	assert.Equal(t, []string{"c1", "c2"}, calls)
	assert.Equal(t, agent.StatusCompleted, res.Status)
	assert.False(t, res.Committed)
	assert.ErrorIs(t, res.Err, fault.Internal)
	assert.Contains(t, res.Err.Error(), "committer 1: disk full")
	assert.Equal(t, agent.FinalizeCommitFailed, finalizeReason(res))
	assert.Equal(t, 1, ended)
}

func TestExecuteOnRunEnd(t *testing.T) {
	t.Parallel()
	// REF 6.1.6 (7: call OnRunEnd after the committers)
	var order []string
	a := &agent.Agent{ID: "bot", Engine: replyEngine("x", nil),
		Referees: []agent.Referee{agent.RefereeFunc(func(context.Context, agent.Run, *agent.Result) (agent.Verdict, error) {
			order = append(order, "referee")
			return agent.Verdict{}, nil
		})},
		Committers: []agent.Committer{agent.CommitterFunc(func(context.Context, agent.Run, *agent.Result) error { order = append(order, "commit"); return nil })}}
	var got *agent.Result
	view := agent.CommitViewFunc(func(context.Context, agent.Run, *agent.Result) error { order = append(order, "view"); return nil })
	res, err := agent.ExecuteWithConfig(context.Background(), a, agent.NoopHost{}, userReq("q"), agent.ExecuteConfig{CommitView: view,
		OnRunEnd: func(r *agent.Result) { order = append(order, "end"); got = r }})
	require.NoError(t, err)
	assert.Equal(t, []string{"referee", "view", "commit", "end"}, order)
	assert.Same(t, res, got)
}
