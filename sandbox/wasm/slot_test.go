package wasm_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/wasm"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// askABI answers askUser once answer is closed.
type askABI struct {
	entered chan struct{}
	answer  chan struct{}
}

func (askABI) Functions() []string { return []string{"askUser", "log"} }

func (a askABI) Call(ctx context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
	if name != "askUser" {
		return nil, fault.New(fault.NotAvailable, "host "+name, "not in this test")
	}
	close(a.entered)
	select {
	case <-a.answer:
		return json.RawMessage(`{"parts": [{"kind": "text", "text": "yes"}]}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A call waiting in askUser gives up its slot: with a pool of one, another
// call runs to completion meanwhile, and the first ends once answered.
func TestBlockingCallFreesSlot(t *testing.T) {
	rt, err := wasm.New(wasm.Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: time.Minute}})
	require.NoError(t, err)
	defer rt.Close()
	bin := guests.Build(t, suiteGuest)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	abi := askABI{entered: make(chan struct{}), answer: make(chan struct{})}
	first := agent.NewBoard()
	done := make(chan error, 1)
	go func() {
		done <- sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "asks", ABI: abi,
			Script: sandbox.Script{Module: bin, Entry: "ask_user"}}, first)
	}()
	<-abi.entered
	require.NoError(t, sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "other",
		Script: sandbox.Script{Module: bin, Entry: "noop"}}, agent.NewBoard()))
	close(abi.answer)
	require.NoError(t, <-done)
	assert.Equal(t, 1.0, first.Vars["answer"])
}
