package local_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 6.2.7: the same idempotency key with the same request replays
// the first result without running again; with another request it is a
// Conflict.
func TestIdempotency(t *testing.T) {
	t.Parallel()
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "session", true: "legacy"}[legacy], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envConfig{legacy: legacy})
			eng := agenttest.New(agenttest.Say("once"))
			e.agents.put("helper", eng)
			ctx := timeout(t)
			req := ask("helper", "task")
			req.IdempotencyKey = "k1"
			first, err := e.svc.Delegate(ctx, req)
			require.NoError(t, err)
			again, err := e.svc.Delegate(ctx, req)
			require.NoError(t, err)
			assert.Equal(t, first, again)
			assert.Len(t, eng.Runs(), 1, "the replay did not run the agent")

			other := ask("helper", "another task")
			other.IdempotencyKey = "k1"
			_, err = e.svc.Delegate(ctx, other)
			assert.ErrorIs(t, err, fault.Conflict)
			async := req
			async.Mode = delegation.ModeAsync
			_, err = e.svc.Delegate(ctx, async)
			assert.ErrorIs(t, err, fault.Conflict, "the mode is part of the request")
		})
	}
}

// Idempotency keys are the calling agent's own (delegation.WithCaller):
// another agent using the same key for another request runs it and gets
// no Conflict (a key's existence does not leak across agents), and does
// not replay the first agent's result; the same agent still does.
func TestIdempotencyKeysPerCaller(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	eng := agenttest.New(agenttest.Say("done"))
	e.agents.put("helper", eng)
	ctx := timeout(t)
	req := ask("helper", "task")
	req.IdempotencyKey = "k1"
	alice := delegation.WithCaller(ctx, "alice")
	first, err := e.svc.Delegate(alice, req)
	require.NoError(t, err)

	other := ask("helper", "another task")
	other.IdempotencyKey = "k1"
	bobs, err := e.svc.Delegate(delegation.WithCaller(ctx, "bob"), other)
	require.NoError(t, err, "bob's key is bob's")
	assert.NotEqual(t, first.ID, bobs.ID)
	same, err := e.svc.Delegate(delegation.WithCaller(ctx, "bob"), req)
	require.ErrorIs(t, err, fault.Conflict, "bob used k1 for another request")
	assert.Empty(t, same.ID)

	again, err := e.svc.Delegate(alice, req)
	require.NoError(t, err)
	assert.Equal(t, first, again, "alice's repeat replays")
	_, err = e.svc.Delegate(alice, other)
	assert.ErrorIs(t, err, fault.Conflict)
	assert.Len(t, eng.Runs(), 2, "alice's and bob's first requests ran, nothing else")
}

// REF 6.2.7: a concurrent repeat of a running request waits for the
// first run and gets its result.
func TestIdempotencyWhileRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	g := agenttest.NewGate()
	eng := agenttest.New(agenttest.WaitGate(g), agenttest.Say("once"))
	e.agents.put("helper", eng)
	req := ask("helper", "task")
	req.IdempotencyKey = "k1"
	ctx := timeout(t)
	var first delegation.Response
	done := make(chan struct{})
	go func() {
		defer close(done)
		first, _ = e.svc.Delegate(ctx, req)
	}()
	<-g.Reached()
	second := make(chan delegation.Response, 1)
	go func() {
		r, _ := e.svc.Delegate(ctx, req)
		second <- r
	}()
	g.Open()
	<-done
	assert.Equal(t, first, <-second)
	assert.Len(t, eng.Runs(), 1)
}

// REF 6.2.7: the idempotency window is bounded: past the retention a
// key runs again, and Get forgets the delegation.
func TestIdempotencyWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{legacy: true, settings: local.ServiceSettings{IdempotencyRetention: local.Duration(time.Nanosecond)}})
	eng := agenttest.New(agenttest.Say("run"))
	e.agents.put("helper", eng)
	ctx := timeout(t)
	req := ask("helper", "task")
	req.IdempotencyKey = "k1"
	first, err := e.svc.Delegate(ctx, req)
	require.NoError(t, err)
	time.Sleep(time.Millisecond) // past the retention of 1ns
	second, err := e.svc.Delegate(ctx, req)
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, second.ID)
	assert.Len(t, eng.Runs(), 2)
	_, err = e.svc.Get(ctx, first.ID)
	assert.ErrorIs(t, err, fault.NotFound)

	bounded := newEnv(t, envConfig{legacy: true})
	bounded.agents.put("helper", eng)
	oldest := bounded.delegate(t, ctx, "helper", "first")
	for range local.MaxRecords {
		bounded.delegate(t, ctx, "helper", "more")
	}
	_, err = bounded.svc.Get(ctx, oldest.ID)
	assert.ErrorIs(t, err, fault.NotFound, "at most MaxRecords finished delegations are remembered")
}

// REF 6.2.1, REF 6.2.2: an async delegation is accepted at
// once and reported through Get (running, then terminal); Close cancels
// the async runs still going and waits for them.
func TestAsync(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{})
	g := agenttest.NewGate()
	e.agents.put("helper", agenttest.New(agenttest.WaitGate(g), agenttest.Say("later")))
	e.agents.put("stuck", agenttest.New(agenttest.Hang()))
	ctx := timeout(t)
	req := ask("helper", "go")
	req.Mode = delegation.ModeAsync
	resp, err := e.svc.Delegate(ctx, req)
	require.NoError(t, err)
	require.NoError(t, resp.Validate())
	assert.Equal(t, delegation.StatusAccepted, resp.Status)
	<-g.Reached()
	var running delegation.Response
	require.Eventually(t, func() bool {
		running, err = e.svc.Get(ctx, resp.ID)
		return err == nil && running.Status == delegation.StatusRunning
	}, wait, 5*time.Millisecond, "running while the target runs")
	assert.NotEmpty(t, running.RunID)
	g.Open()
	final := poll(t, e.svc, resp.ID)
	assert.Equal(t, delegation.StatusSucceeded, final.Status)
	assert.Equal(t, "later", agenttest.ReplyText(final.Output))

	stuck := ask("stuck", "go")
	stuck.Mode = delegation.ModeAsync
	resp, err = e.svc.Delegate(ctx, stuck)
	require.NoError(t, err)
	require.NoError(t, e.svc.Close())
	got, err := e.svc.Get(ctx, resp.ID)
	require.NoError(t, err)
	assert.Equal(t, delegation.StatusCanceled, got.Status, "Close cancelled the run and waited for it")
}

// REF 6.2.2: max_concurrency caps the delegations running at once
// (one more is refused with RateLimit, not queued), and timeout bounds
// each delegated run.
func TestConcurrencyAndTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{settings: local.ServiceSettings{MaxConcurrency: 2}})
	g := agenttest.NewGate()
	var running atomic.Int32
	e.agents.put("slow", agenttest.New(agenttest.Func(func(context.Context, *agenttest.Env) error {
		running.Add(1)
		return nil
	}), agenttest.WaitGate(g), agenttest.Say("ok")))
	ctx := timeout(t)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { e.delegate(t, ctx, "slow", "go") })
	}
	require.Eventually(t, func() bool { return running.Load() == 2 }, wait, 5*time.Millisecond)
	_, err := e.svc.Delegate(ctx, ask("slow", "third"))
	assert.ErrorIs(t, err, fault.RateLimit, "the third concurrent delegation is refused")
	g.Open()
	wg.Wait()
	assert.Equal(t, delegation.StatusSucceeded, e.delegate(t, ctx, "slow", "after").Status, "slots are released")

	limited := newEnv(t, envConfig{settings: local.ServiceSettings{Timeout: local.Duration(50 * time.Millisecond)}})
	limited.agents.put("stuck", agenttest.New(agenttest.Hang()))
	resp := limited.delegate(t, ctx, "stuck", "go")
	assert.Equal(t, delegation.StatusCanceled, resp.Status)
	require.NotNil(t, resp.Error)
	assert.ErrorIs(t, resp.Error.Err(), fault.Timeout)
}

// REF 6.2.2: defer_workers caps the async delegations running at
// once; sync delegations are not counted against it.
func TestDeferWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{settings: local.ServiceSettings{MaxConcurrency: 4, DeferWorkers: 1}})
	g := agenttest.NewGate()
	e.agents.put("slow", agenttest.New(agenttest.WaitGate(g), agenttest.Say("ok")))
	e.agents.put("quick", agenttest.New(agenttest.Say("ok")))
	ctx := timeout(t)
	req := ask("slow", "go")
	req.Mode = delegation.ModeAsync
	first, err := e.svc.Delegate(ctx, req)
	require.NoError(t, err)
	second := ask("quick", "go")
	second.Mode = delegation.ModeAsync
	_, err = e.svc.Delegate(ctx, second)
	assert.ErrorIs(t, err, fault.RateLimit, "one async worker only")
	assert.Equal(t, delegation.StatusSucceeded, e.delegate(t, ctx, "quick", "sync").Status, "sync runs are not capped by defer_workers")
	g.Open()
	poll(t, e.svc, first.ID)
	require.Eventually(t, func() bool {
		r, err := e.svc.Delegate(ctx, second)
		return err == nil && r.Status == delegation.StatusAccepted
	}, wait, 5*time.Millisecond, "the worker is free again")
}
