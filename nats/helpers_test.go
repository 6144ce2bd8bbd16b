package nats_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/stretchr/testify/require"
)

// wait bounds what must happen in a test; a healthy system does it at
// once.
const wait = 30 * time.Second

// leaseTTL is the tests' lease: short, so that takeovers come soon, and
// long enough that a busy machine renews it in time. (At 4 s, a full
// race-detector run beside other builds on two cores, at a load average
// of 9 to 12, once left a live chaos node's renewals unanswered by the
// in-process cluster for the whole lease, and it lost the lease.)
const leaseTTL = 8 * time.Second

// connect connects a bus named node to url with the tests' lease, closed
// when the test ends.
func connect(t testing.TB, url, node string, mod ...func(*nats.Config)) *nats.Bus {
	t.Helper()
	cfg := nats.Config{URL: url, Node: node, LeaseTTL: leaseTTL}
	for _, m := range mod {
		m(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	b, err := nats.Connect(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// server starts one embedded server.
func server(t testing.TB) *natstest.Server { return natstest.Run(t) }

// eventually polls cond every 10 ms until it holds, failing after wait.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(t, "timed out", "%s: not within %s", what, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
