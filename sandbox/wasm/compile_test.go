package wasm

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowModule is within the default bounds and takes wazero's compiler a
// second or so: 6,000 br_if in a row (18 million pairs of them). A custom
// section makes each one new to the process-wide compilation cache.
func slowModule() []byte {
	b := []byte{0x02, 0x40}
	for range 6000 {
		b = append(b, 0x41, 0x00, 0x0d, 0x00)
	}
	bin := nodeModule{run: code(noLocals, append(b, 0x0b, 0x0b)...)}.bytes()
	return append(bin, section(0, str("nonce"), uleb(uint64(time.Now().UnixNano())))...)
}

// wazero compiles without looking at the context, so a compile cannot be
// stopped; a call that waits for another call's compile of the same
// module waits only as long as its own context: cancelled, it ends with
// Aborted while the compile goes on, and the compile's call succeeds.
func TestWaitingForACompileEndsWithTheCall(t *testing.T) {
	rt, err := New(Options{Limits: sandbox.Limits{WallTime: time.Minute}})
	require.NoError(t, err)
	defer rt.Close()
	bin := slowModule()
	inv := sandbox.Invocation{Node: "slow", Script: sandbox.Script{Module: bin, Entry: "run"}}
	first := make(chan error, 1)
	go func() { first <- sandbox.InvokeOn(context.Background(), rt, inv, agent.NewBoard()) }()
	m := waitForUsers(t, rt, sha256.Sum256(bin), 1)

	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() { second <- sandbox.InvokeOn(ctx, rt, inv, agent.NewBoard()) }()
	waitForUsers(t, rt, m.key, 2)
	if compiled(m) {
		t.Skip("the compile ended before the waiting call was cancelled")
	}
	cancel()
	err = <-second
	assert.False(t, compiled(m), "the cancelled call waited for the compile")
	assert.True(t, errors.Is(err, fault.Aborted), "%v", err)
	require.NoError(t, <-first)
}

func compiled(m *module) bool {
	select {
	case <-m.ready:
		return true
	default:
		return false
	}
}

// waitForUsers waits until the module of key has n users.
func waitForUsers(t *testing.T, rt *Runtime, key [32]byte, n int) *module {
	t.Helper()
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(time.Millisecond) {
		rt.mu.Lock()
		m := rt.modules[key]
		users := 0
		if m != nil {
			users = m.users
		}
		rt.mu.Unlock()
		if users >= n {
			return m
		}
	}
	t.Fatalf("no %d users of the module", n)
	return nil
}
