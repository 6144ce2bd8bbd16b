package eventtest

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Wait is how long the suite waits for something that must happen. It is
// generous on purpose: a healthy bus answers at once.
const Wait = 5 * time.Second

// Case is one conformance check.
type Case struct {
	Name        string // a short name, used as the subtest name
	Description string // one sentence: what a conforming bus does
	Run         func(t *testing.T, bus event.Bus)
}

// RunBusSuite runs every case of Cases, each as a parallel subtest with a
// fresh bus from newBus that is closed when the subtest ends.
func RunBusSuite(t *testing.T, newBus func(t *testing.T) event.Bus) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			bus := newBus(t)
			require.NotNil(t, bus, "newBus returned nil")
			t.Cleanup(func() { _ = bus.Close() })
			t.Logf("%s", c.Description)
			c.Run(t, bus)
		})
	}
}

// Receive waits for the next envelope of sub and fails the test if none
// arrives within Wait or the channel closes.
func Receive(t testing.TB, sub event.Subscription) event.Envelope {
	t.Helper()
	select {
	case env, ok := <-sub.C():
		require.True(t, ok, "subscription %q closed while an envelope was expected", sub.Pattern())
		return env
	case <-time.After(Wait):
		require.FailNow(t, "no envelope", "subscription %q received nothing within %s", sub.Pattern(), Wait)
	}
	return event.Envelope{}
}

// AssertEmpty checks that sub has nothing buffered and is still open.
func AssertEmpty(t testing.TB, sub event.Subscription) {
	t.Helper()
	select {
	case env, ok := <-sub.C():
		if ok {
			assert.Failf(t, "unexpected envelope", "subscription %q got %q", sub.Pattern(), env.Subject)
		} else {
			assert.Failf(t, "closed", "subscription %q is closed", sub.Pattern())
		}
	default:
	}
}

// AssertClosed waits up to Wait for sub's channel to close, draining what is
// buffered.
func AssertClosed(t testing.TB, sub event.Subscription) {
	t.Helper()
	deadline := time.After(Wait)
	for {
		select {
		case _, ok := <-sub.C():
			if !ok {
				return
			}
		case <-deadline:
			require.FailNow(t, "not closed", "subscription %q did not close within %s", sub.Pattern(), Wait)
		}
	}
}

// Subscribe subscribes with the zero SubConfig and a ctx that ends with the
// test.
func Subscribe(t testing.TB, bus event.Bus, pattern string) event.Subscription {
	t.Helper()
	return SubscribeWithConfig(t, bus, pattern, event.SubConfig{})
}

// SubscribeWithConfig subscribes with cfg and a ctx that ends with the
// test.
func SubscribeWithConfig(t testing.TB, bus event.Bus, pattern string, cfg event.SubConfig) event.Subscription {
	t.Helper()
	sub, err := bus.Subscribe(t.Context(), pattern, cfg)
	require.NoError(t, err)
	return sub
}

// Publish publishes an envelope with subject and payload and requires
// success.
func Publish(t testing.TB, bus event.Bus, subject string, payload any) {
	t.Helper()
	env, err := event.NewEnvelope(context.Background(), subject, payload)
	require.NoError(t, err)
	require.NoError(t, bus.Publish(t.Context(), env))
}
