package hostabi_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 6.2.1 (the delegate host function speaks Request and
// Response): delegation is granted per agent and per target. "delegate"
// grants every target, "delegate:<id>" one; anything else is PolicyDenied
// before the service is reached.
func TestDelegateGrants(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		caps   []string
		target string
		ok     bool
	}{
		{"any target", []string{"delegate"}, "helper", true},
		{"the granted target", []string{"delegate:helper"}, "helper", true},
		{"one of two targets", []string{"delegate:a", "delegate:helper"}, "helper", true},
		{"another target", []string{"delegate:helper"}, "other", false},
		{"a prefix is not a target", []string{"delegate:help"}, "helper", false},
		{"default grants", nil, "helper", false},
		{"no grants", []string{}, "helper", false},
		{"other capabilities", []string{"emit", "steer"}, "helper", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRecorder()
			d := newDispatcher(r.fullHost(), tt.caps, nil, sandbox.Limits{})
			out, err := call(t, d, hostabi.FuncDelegate, `["`+tt.target+`","hi"]`)
			if !tt.ok {
				requireKind(t, err, fault.PolicyDenied)
				assert.Empty(t, r.delegated, "a refused call never reaches the service")
				return
			}
			require.NoError(t, err)
			var res hostabi.DelegateResult
			require.NoError(t, json.Unmarshal(out, &res))
			assert.Equal(t, delegation.StatusSucceeded, res.Status)
			assert.Equal(t, "re: hi", res.Text)
			require.Len(t, r.delegated, 1)
			assert.Equal(t, tt.target, r.delegated[0].Target)
		})
	}
}

// REF 6.2.1: the arguments become a sync Request; a string is a
// user text message, an object a message in wire form; options carry
// inputs, metadata and the idempotency key.
func TestDelegateArguments(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := newDispatcher(r.fullHost(), []string{"delegate"}, nil, sandbox.Limits{})
	_, err := call(t, d, hostabi.FuncDelegate,
		`["helper",{"role":"user","parts":[{"type":"text","text":"sum"}]},{"inputs":{"n":2},"metadata":{"k":"v"},"idempotency_key":"k1"}]`)
	require.NoError(t, err)
	require.Len(t, r.delegated, 1)
	got := r.delegated[0]
	assert.Equal(t, delegation.ModeSync, got.Mode)
	assert.Equal(t, "sum", got.Input.Text())
	assert.Equal(t, message.RoleUser, got.Input.Role)
	assert.Equal(t, map[string]any{"n": float64(2)}, got.Inputs)
	assert.Equal(t, map[string]string{"k": "v"}, got.Metadata)
	assert.Equal(t, "k1", got.IdempotencyKey)

	for _, bad := range []string{
		`["helper"]`, `[1,"hi"]`, `[null,"hi"]`, `["","hi"]`, `[" helper","hi"]`, `["helper",null]`, `["helper",7]`,
		`["helper",{"role":"nobody","parts":[]}]`, `["helper","hi",{"unknown":1}]`, `["helper","hi",[]]`,
		`["helper","hi",{"idempotency_key":" k"}]`, `["helper","hi",{},4]`,
	} {
		_, err := call(t, d, hostabi.FuncDelegate, bad)
		require.Error(t, err, bad)
		requireKind(t, err, fault.Validation)
	}
	assert.Len(t, r.delegated, 1, "no malformed call reached the service")
}

// REF 6.2.1: the result carries the response; a refusal of the
// service keeps its kind (a depth limit stays PolicyDenied); the call and
// its answer are journaled, as the result comes from outside the script.
func TestDelegateResultAndJournal(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	j := hostabi.NewJournal()
	d := newDispatcher(r.fullHost(), []string{"delegate"}, j, sandbox.Limits{})
	first, err := call(t, d, hostabi.FuncDelegate, `["helper","hi"]`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"dlg-1","target":"helper","status":"succeeded","run_id":"run-child",
		"output":[{"role":"assistant","parts":[{"type":"text","text":"re: hi"}]}],"text":"re: hi"}`, string(first))

	r.delegateFn = func(context.Context, delegation.Request) (delegation.Response, error) {
		return delegation.Response{ID: "dlg-2", Target: "helper", Status: delegation.StatusFailed,
			Error: &delegation.ErrorInfo{Code: "budget_exceeded", Message: "too long"}}, nil
	}
	out, err := call(t, d, hostabi.FuncDelegate, `["helper","again"]`)
	require.NoError(t, err, "a failed run is a result, not an error")
	assert.JSONEq(t, `{"id":"dlg-2","target":"helper","status":"failed","run_id":"","output":[],"text":"",
		"error":{"code":"budget_exceeded","message":"too long"}}`, string(out))

	r.delegateFn = func(context.Context, delegation.Request) (delegation.Response, error) {
		return delegation.Response{}, fault.New(fault.PolicyDenied, "delegate", "depth 9 exceeds max_depth 8")
	}
	_, err = call(t, d, hostabi.FuncDelegate, `["helper","deep"]`)
	requireKind(t, err, fault.PolicyDenied)
	assert.Contains(t, err.Error(), `node "n1"`)

	entries := j.Entries()
	require.Len(t, entries, 3)
	assert.Equal(t, hostabi.FuncDelegate, entries[0].Func)
	assert.JSONEq(t, `["helper","hi"]`, string(entries[0].Args))
	assert.JSONEq(t, string(first), string(entries[0].Result))
	assert.JSONEq(t, string(out), string(entries[1].Result))
	require.NotNil(t, entries[2].Err)
	assert.Equal(t, "policy_denied", entries[2].Err.Code)
}

// The delegate function passes the caller's host on the ctx, so that a
// service without a session manager can run the target under it.
func TestDelegateCarriesHost(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	h := r.fullHost()
	var seen agent.Host
	r.delegateFn = func(ctx context.Context, req delegation.Request) (delegation.Response, error) {
		seen, _ = agent.HostFromContext(ctx)
		return delegation.Response{ID: "d", Target: req.Target, Status: delegation.StatusSucceeded}, nil
	}
	_, err := call(t, newDispatcher(h, []string{"delegate"}, nil, sandbox.Limits{}), hostabi.FuncDelegate, `["helper","hi"]`)
	require.NoError(t, err)
	assert.Same(t, h, seen)
}

// FuzzDelegateArgs checks the delegate argument decoder: any input either
// fails with Validation (or BudgetExceeded for size), never reaching the
// service, or reaches it as a valid Request whose target the document
// granted.
func FuzzDelegateArgs(f *testing.F) {
	f.Add([]byte(`["helper","hi"]`))
	f.Add([]byte(`["helper",{"role":"user","parts":[{"type":"text","text":"q"}]},{"inputs":{"a":[1,{}]},"metadata":{"k":"v"}}]`))
	f.Add([]byte(`["helper","hi",{"idempotency_key":"k"}]`))
	f.Add([]byte(`["other","hi"]`))
	f.Add([]byte(`["helper",{"role":"tool","parts":[{"type":"tool_result","tool_result":{"tool_call_id":"c","content":"x"}}]}]`))
	f.Add([]byte(`["helper",null,null]`))
	f.Add([]byte(`["\u0000","\ud800"]`))
	f.Fuzz(func(t *testing.T, args []byte) {
		r := newRecorder()
		d := newDispatcher(r.fullHost(), []string{"delegate:helper"}, nil, sandbox.Limits{MaxValueBytes: 4096})
		out, err := d.Call(context.Background(), hostabi.FuncDelegate, args)
		if err != nil {
			if !fault.Is(err, fault.Validation) && !fault.Is(err, fault.BudgetExceeded) && !fault.Is(err, fault.PolicyDenied) {
				t.Fatalf("delegate %q: unexpected error kind: %v", args, err)
			}
			if len(r.delegated) != 0 {
				t.Fatalf("delegate %q: a refused call reached the service", args)
			}
			return
		}
		if len(r.delegated) != 1 {
			t.Fatalf("delegate %q: the service saw %d requests", args, len(r.delegated))
		}
		req := r.delegated[0]
		if req.Target != "helper" {
			t.Fatalf("delegate %q: target %q was not granted", args, req.Target)
		}
		if verr := req.Validate(); verr != nil {
			t.Fatalf("delegate %q: an invalid request reached the service: %v", args, verr)
		}
		if !json.Valid(out) {
			t.Fatalf("delegate %q: the result is not JSON", args)
		}
	})
}

// An interrupt of the caller's run while a delegation runs ends the
// delegation's ctx with the interrupt as its cause (the service then
// interrupts the sub-run) and is remembered for the caller: its engine
// and checkInterrupt see it as if they had polled it. A delegate call made
// after the run was interrupted starts nothing.
func TestDelegateInterruptedCaller(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	started := make(chan struct{})
	var cause error
	r.delegateFn = func(ctx context.Context, req delegation.Request) (delegation.Response, error) {
		close(started)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return delegation.Response{ID: "dlg-1", Target: req.Target, RunID: "run-child", Status: delegation.StatusCanceled,
			Error: &delegation.ErrorInfo{Code: "interrupted", Message: "stopped"}}, nil
	}
	latch := &hostabi.InterruptLatch{}
	d := hostabi.NewDispatcher(hostabi.Config{Host: r.fullHost(), Run: agent.Run{ID: "run-1", Capabilities: []string{"delegate"}}, Node: "n",
		Interrupts: latch})
	go func() {
		<-started
		r.interrupts <- agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "stop"}
	}()
	out, err := call(t, d, hostabi.FuncDelegate, `["helper","hi"]`)
	require.NoError(t, err)
	var res hostabi.DelegateResult
	require.NoError(t, json.Unmarshal(out, &res))
	assert.Equal(t, delegation.StatusCanceled, res.Status)

	var ie *agent.InterruptedError
	require.ErrorAs(t, cause, &ie, "the delegation's ctx ended with the interrupt")
	assert.Equal(t, "stop", ie.Interrupt.Detail)
	intr, ok := latch.Seen()
	require.True(t, ok, "the caller's latch remembers the interrupt")
	assert.Equal(t, agent.CauseUserCancel, intr.Cause)

	_, err = call(t, d, hostabi.FuncDelegate, `["helper","again"]`)
	requireKind(t, err, fault.Interrupted)
	assert.Len(t, r.delegated, 1, "no sub-run starts once the run is interrupted")
}

// A delegation that ends on its own leaves the caller's interrupt channel
// alone: an interrupt sent afterwards is still there for the caller.
func TestDelegateWatchEndsWithTheCall(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	latch := &hostabi.InterruptLatch{}
	d := hostabi.NewDispatcher(hostabi.Config{Host: r.fullHost(), Run: agent.Run{ID: "run-1", Capabilities: []string{"delegate"}}, Node: "n",
		Interrupts: latch})
	_, err := call(t, d, hostabi.FuncDelegate, `["helper","hi"]`)
	require.NoError(t, err)
	r.interrupts <- agent.Interrupt{Cause: agent.CauseUserCancel}
	_, seen := latch.Seen()
	assert.False(t, seen)
	intr, ok := latch.Poll(r.interrupts)
	require.True(t, ok, "the interrupt waited in the channel for the caller")
	assert.Equal(t, agent.CauseUserCancel, intr.Cause)
}

// An interrupt another poller took (a parallel branch, the engine) ends a
// running delegation too: the run's latch is shared.
func TestDelegateInterruptSeenElsewhere(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	started := make(chan struct{})
	r.delegateFn = func(ctx context.Context, req delegation.Request) (delegation.Response, error) {
		close(started)
		<-ctx.Done()
		return delegation.Response{ID: "dlg-1", Target: req.Target, RunID: "run-child", Status: delegation.StatusCanceled,
			Error: delegation.ErrorInfoOf(context.Cause(ctx))}, nil
	}
	latch := &hostabi.InterruptLatch{}
	d := hostabi.NewDispatcher(hostabi.Config{Host: r.fullHost(), Run: agent.Run{ID: "run-1", Capabilities: []string{"delegate"}},
		Node: "n", Interrupts: latch})
	other := make(chan agent.Interrupt, 1) // another branch's view of the channel
	go func() {
		<-started
		other <- agent.Interrupt{Cause: agent.CauseUserCancel}
		_, _ = latch.Poll(other)
	}()
	out, err := call(t, d, hostabi.FuncDelegate, `["helper","hi"]`)
	require.NoError(t, err)
	var res hostabi.DelegateResult
	require.NoError(t, json.Unmarshal(out, &res))
	assert.Equal(t, delegation.StatusCanceled, res.Status)
	require.NotNil(t, res.Error)
	assert.Equal(t, "interrupted", res.Error.Code)
}

// A dispatcher with a latch of its own (no Config.Interrupts) does not
// watch: it would take the interrupt from the host's channel and keep it
// from the run. An interrupt sent while the delegation runs stays in the
// channel for the caller.
func TestDelegateWithoutRunLatchDoesNotWatch(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	var watched bool
	r.delegateFn = func(ctx context.Context, req delegation.Request) (delegation.Response, error) {
		r.interrupts <- agent.Interrupt{Cause: agent.CauseUserCancel}
		select {
		case <-ctx.Done():
			watched = true
		case <-time.After(200 * time.Millisecond):
		}
		return delegation.Response{ID: "dlg-1", Target: req.Target, RunID: "run-child", Status: delegation.StatusSucceeded}, nil
	}
	d := hostabi.NewDispatcher(hostabi.Config{Host: r.fullHost(), Run: agent.Run{ID: "run-1", Capabilities: []string{"delegate"}},
		Node: "n"})
	_, err := call(t, d, hostabi.FuncDelegate, `["helper","hi"]`)
	require.NoError(t, err)
	assert.False(t, watched)
	assert.Len(t, r.interrupts, 1, "the interrupt is still the caller's")
}

// The delegate host function names the run's agent as the caller
// (delegation.WithCaller), whose idempotency keys are its own.
func TestDelegateNamesTheCaller(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	var caller string
	r.delegateFn = func(ctx context.Context, req delegation.Request) (delegation.Response, error) {
		caller = delegation.CallerFromContext(ctx)
		return delegation.Response{ID: "dlg-1", Target: req.Target, RunID: "run-child", Status: delegation.StatusSucceeded}, nil
	}
	d := hostabi.NewDispatcher(hostabi.Config{Host: r.fullHost(),
		Run: agent.Run{ID: "run-1", AgentID: "alice", Capabilities: []string{"delegate"}}, Node: "n"})
	_, err := call(t, d, hostabi.FuncDelegate, `["helper","hi"]`)
	require.NoError(t, err)
	assert.Equal(t, "alice", caller)
}
