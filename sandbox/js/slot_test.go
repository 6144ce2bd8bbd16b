package js_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockingABI answers askUser and delegate through its fields.
type blockingABI struct {
	askUser  func(ctx context.Context) (json.RawMessage, error)
	delegate func(ctx context.Context) (json.RawMessage, error)
}

func (blockingABI) Functions() []string { return []string{"askUser", "delegate", "log"} }

func (a blockingABI) Call(ctx context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
	switch {
	case name == "askUser" && a.askUser != nil:
		return a.askUser(ctx)
	case name == "delegate" && a.delegate != nil:
		return a.delegate(ctx)
	}
	return nil, fault.New(fault.NotAvailable, "host "+name, "not in this test")
}

// waitCtx bounds a test's calls: a deadlock fails the test rather than
// hanging it.
func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A call waiting in askUser gives up its slot: with a pool of one, another
// call runs to completion meanwhile, and the first ends once answered.
func TestBlockingCallFreesSlot(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: time.Minute}})
	entered, answer := make(chan struct{}), make(chan struct{})
	abi := blockingABI{askUser: func(ctx context.Context) (json.RawMessage, error) {
		close(entered)
		select {
		case <-answer:
			return json.RawMessage(`{"parts": [{"kind": "text", "text": "yes"}]}`), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
	ctx := waitCtx(t)
	first := agent.NewBoard()
	done := make(chan error, 1)
	go func() {
		done <- sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "asks", ABI: abi,
			Script: sandbox.Script{Source: `board.setVar("answer", host.askUser({parts: []}).parts[0].text)`}}, first)
	}()
	<-entered
	second := agent.NewBoard()
	require.NoError(t, sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "other",
		Script: sandbox.Script{Source: `board.setVar("x", 1)`}}, second))
	assert.Equal(t, 1.0, second.Vars["x"])
	close(answer)
	require.NoError(t, <-done)
	assert.Equal(t, "yes", first.Vars["answer"])
}

// A delegation chain deeper than the pool completes: each delegate call
// runs the next script on the same runtime while its caller waits without
// a slot.
func TestNestedDelegationDeeperThanPool(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: time.Minute}})
	const depth = 3
	script := sandbox.Script{Source: `board.setVar("depth", host.delegate("next", "go").depth)`}
	var abiAt func(level int) sandbox.ABI
	abiAt = func(level int) sandbox.ABI {
		return blockingABI{delegate: func(ctx context.Context) (json.RawMessage, error) {
			if level == depth {
				return json.RawMessage(fmt.Sprintf(`{"depth": %d}`, level)), nil
			}
			b := agent.NewBoard()
			if err := sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: fmt.Sprintf("level%d", level+1), ABI: abiAt(level + 1), Script: script}, b); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]any{"depth": b.Vars["depth"]})
		}}
	}
	b := agent.NewBoard()
	require.NoError(t, sandbox.InvokeOn(waitCtx(t), rt, sandbox.Invocation{Node: "level1", ABI: abiAt(1), Script: script}, b))
	assert.Equal(t, float64(depth), b.Vars["depth"])
}

// A call whose host call returned waits for a slot; a cancel while it
// waits ends it cleanly (Aborted), and the runtime serves the next call.
func TestStopWhileWaitingForSlot(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: time.Minute}})
	entered, answer := make(chan struct{}), make(chan struct{})
	abi := blockingABI{askUser: func(context.Context) (json.RawMessage, error) {
		close(entered)
		<-answer
		return json.RawMessage(`{"parts": []}`), nil
	}}
	askCtx, cancelAsk := context.WithCancel(waitCtx(t))
	defer cancelAsk()
	asked := make(chan error, 1)
	go func() {
		asked <- sandbox.InvokeOn(askCtx, rt, sandbox.Invocation{Node: "asks", ABI: abi,
			Script: sandbox.Script{Source: `host.askUser({parts: []}); board.setVar("after", true)`}}, agent.NewBoard())
	}()
	<-entered
	// The slot goes to a call that spins until cancelled.
	spinCtx, cancelSpin := context.WithCancel(waitCtx(t))
	defer cancelSpin()
	spun := make(chan error, 1)
	go func() {
		spun <- sandbox.InvokeOn(spinCtx, rt, sandbox.Invocation{Node: "spins",
			Script: sandbox.Script{Source: `for (;;) {}`}}, agent.NewBoard())
	}()
	time.Sleep(50 * time.Millisecond) // lets the spinning call take the slot; the outcome is the same either way
	close(answer)
	cancelAsk()
	err := <-asked
	require.Error(t, err)
	assert.True(t, errors.Is(err, fault.Aborted), "%v", err)
	assert.ErrorIs(t, err, context.Canceled)
	cancelSpin()
	require.Error(t, <-spun)
	b := agent.NewBoard()
	require.NoError(t, sandbox.InvokeOn(waitCtx(t), rt, sandbox.Invocation{Node: "next",
		Script: sandbox.Script{Source: `board.setVar("x", 1)`}}, b))
}
