package nats_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/event/eventtest"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 12.1.9: closing a bus ends every goroutine it started — its
// inbound delivery, its cursor subscriptions, the renewals of its claims
// and its connection's — and a second Close returns the first result.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	srv := server(t)
	settle := func() int {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	before := -1
	for round := range 4 {
		if round == 1 { // the first round made the stream and the bucket, which the server keeps
			before = settle()
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		a, err := nats.Connect(ctx, nats.Config{URL: srv.URL(), Node: "a", LeaseTTL: leaseTTL})
		require.NoError(t, err)
		b, err := nats.Connect(ctx, nats.Config{URL: srv.URL(), Node: "b", LeaseTTL: leaseTTL})
		require.NoError(t, err)
		live := eventtest.Subscribe(t, b, "x.>")
		cur, err := b.SubscribeFrom(ctx, "x.>", 0, event.SubConfig{BufferSize: 1})
		require.NoError(t, err)
		_, err = b.SubscribeFrom(ctx, "y.>", 0, event.SubConfig{}) // never closed by its reader
		require.NoError(t, err)
		_, err = a.Ownership().Acquire(ctx, sk)
		require.NoError(t, err)
		for i := range 3 {
			eventtest.Publish(t, a, "x.y", i)
		}
		eventtest.Receive(t, live)
		eventtest.Receive(t, cur) // the rest wait in the stream
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
		require.NoError(t, a.Close(), "round %d", round)
		cancel()
	}
	var after int
	eventually(t, "the goroutines end", func() bool { after = settle(); return after <= before })
	assert.LessOrEqual(t, after, before)
}

// REF 12.2.5: a cursor subscription that ends — closed, its ctx ended,
// or its bus closed — deletes its consumer from the server, rather than
// leaving it (and the server's goroutines and state for it) until the
// server finds it idle minutes later.
func TestClosedCursorLeavesNoConsumer(t *testing.T) {
	srv := server(t)
	reader := connect(t, srv.URL(), "reader")
	admin := connect(t, srv.URL(), "admin")
	consumers := func() int {
		st, err := jetstream.New(admin.Conn())
		require.NoError(t, err)
		s, err := st.Stream(t.Context(), nats.DefaultStream)
		require.NoError(t, err)
		info, err := s.Info(t.Context())
		require.NoError(t, err)
		return info.State.Consumers
	}
	closed, err := reader.SubscribeFrom(t.Context(), "x.>", 0, event.SubConfig{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	_, err = reader.SubscribeFrom(ctx, "x.>", 0, event.SubConfig{})
	require.NoError(t, err)
	other := connect(t, srv.URL(), "other")
	_, err = other.SubscribeFrom(t.Context(), "x.>", 0, event.SubConfig{})
	require.NoError(t, err)
	require.Equal(t, 3, consumers())

	require.NoError(t, closed.Close())
	cancel()
	require.NoError(t, other.Close())
	eventually(t, "the consumers are deleted", func() bool { return consumers() == 0 })
}
