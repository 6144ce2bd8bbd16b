package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steerHost is a host that offers the SteerSource capability.
type steerHost struct {
	agent.NoopHost
	name string
}

func (h *steerHost) DrainSteer() []message.Message {
	return []message.Message{message.NewTextMessage(message.RoleUser, "from "+h.name)}
}

// decorator wraps a host the way runtime decorators do: it forwards the
// Host methods and unwraps to its inner host. It counts its unwraps.
type decorator struct {
	agent.Host
	inner   agent.Host
	unwraps *atomic.Int64
}

func (d *decorator) UnwrapHost() agent.Host {
	if d.unwraps != nil {
		d.unwraps.Add(1)
	}
	return d.inner
}

// wrapN wraps h in n decorators, so h ends up at depth n.
func wrapN(h agent.Host, n int, unwraps *atomic.Int64) agent.Host {
	for range n {
		h = &decorator{Host: h, inner: h, unwraps: unwraps}
	}
	return h
}

// stopper replaces an authorising surface: it serves the inner host's
// methods but returns nil from UnwrapHost, hiding the inner capabilities.
type stopper struct{ agent.Host }

func (stopper) UnwrapHost() agent.Host { return nil }

// fakeBus is an event.Bus for identity checks; no method is called.
type fakeBus struct {
	event.Bus
	name string
}

// busHost offers the EventBusProvider capability.
type busHost struct {
	agent.NoopHost
	bus event.Bus
}

func (h busHost) EventBus() event.Bus { return h.bus }

// REF 6.1.3
func TestCapabilityFromHost(t *testing.T) {
	t.Parallel()
	steer := &steerHost{name: "base"}
	tests := []struct {
		name  string
		host  agent.Host
		found bool
	}{
		{"on the host itself", steer, true},
		{"through HostFuncs", &agent.HostFuncs{Inner: steer}, true},
		{"through nested HostFuncs", &agent.HostFuncs{Inner: &agent.HostFuncs{Inner: steer}}, true},
		{"through a chain of decorators", wrapN(steer, 5, nil), true},
		{"through decorators and HostFuncs mixed", wrapN(&agent.HostFuncs{Inner: wrapN(steer, 3, nil)}, 2, nil), true},
		{"absent on NoopHost", agent.NoopHost{}, false},
		{"absent through decorators", wrapN(agent.NoopHost{}, 3, nil), false},
		{"nil host", nil, false},
		{"typed-nil host", (*steerHost)(nil), false},
		{"typed-nil HostFuncs", (*agent.HostFuncs)(nil), false},
		{"typed-nil inner host", &agent.HostFuncs{Inner: (*steerHost)(nil)}, false},
		{"typed-nil deep in the chain", wrapN(&decorator{Host: agent.NoopHost{}, inner: (*steerHost)(nil)}, 3, nil), false},
		{"HostFuncs with nil inner", &agent.HostFuncs{}, false},
		{"stopped by a decorator returning nil", stopper{Host: steer}, false},
		{"stopped below other decorators", wrapN(stopper{Host: steer}, 3, nil), false},
		{"a stopper hides every host below it", stopper{Host: wrapN(steer, 2, nil)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := agent.CapabilityFromHost[agent.SteerSource](tt.host)
			assert.Equal(t, tt.found, ok)
			if tt.found {
				require.NotNil(t, got)
				assert.Same(t, steer, got)
				assert.Equal(t, "from base", got.DrainSteer()[0].Text())
			} else {
				assert.Nil(t, got)
			}
		})
	}
}

// steerDecorator offers SteerSource itself and unwraps to another host.
type steerDecorator struct {
	steerHost
	inner agent.Host
}

func (d *steerDecorator) UnwrapHost() agent.Host { return d.inner }

// REF 6.1.3
// The outermost host that carries the capability wins, and concrete types
// can be searched for as well as interfaces.
func TestCapabilityFromHostOrder(t *testing.T) {
	t.Parallel()
	inner := &steerHost{name: "inner"}
	outer := &steerDecorator{steerHost: steerHost{name: "outer"}, inner: wrapN(inner, 2, nil)}
	got, ok := agent.CapabilityFromHost[agent.SteerSource](wrapN(outer, 1, nil))
	require.True(t, ok)
	assert.Same(t, outer, got)
	assert.Equal(t, "from outer", got.DrainSteer()[0].Text())

	// A decorator that only forwards the Host methods of a steer host does
	// not offer SteerSource (it embeds the Host interface), so the search
	// goes on to what it unwraps to.
	chain := &decorator{Host: &steerHost{name: "forwarded"}, inner: wrapN(inner, 2, nil)}
	got, ok = agent.CapabilityFromHost[agent.SteerSource](chain)
	require.True(t, ok)
	assert.Same(t, inner, got)

	outerHost := &steerHost{name: "outer"}

	hf := &agent.HostFuncs{Inner: inner}
	got2, ok := agent.CapabilityFromHost[*agent.HostFuncs](wrapN(hf, 2, nil))
	require.True(t, ok)
	assert.Same(t, hf, got2)

	got3, ok := agent.CapabilityFromHost[*steerHost](&agent.HostFuncs{Inner: wrapN(outerHost, 1, nil)})
	require.True(t, ok)
	assert.Same(t, outerHost, got3)
}

// REF 6.1.3
// The limit: the host passed in is at depth 0 and each UnwrapHost goes one
// level deeper. A capability at depth MaxUnwrapDepth (64) is found; one at
// depth 65 is not.
func TestCapabilityFromHostDepthLimit(t *testing.T) {
	t.Parallel()
	require.Equal(t, 64, agent.MaxUnwrapDepth)
	for _, tt := range []struct {
		depth int
		found bool
	}{
		{0, true},
		{1, true},
		{agent.MaxUnwrapDepth - 1, true},
		{agent.MaxUnwrapDepth, true},
		{agent.MaxUnwrapDepth + 1, false},
		{agent.MaxUnwrapDepth + 10, false},
	} {
		t.Run(fmt.Sprint(tt.depth), func(t *testing.T) {
			t.Parallel()
			var unwraps atomic.Int64
			steer := &steerHost{name: "deep"}
			_, ok := agent.CapabilityFromHost[agent.SteerSource](wrapN(steer, tt.depth, &unwraps))
			assert.Equal(t, tt.found, ok)
			want := min(tt.depth, agent.MaxUnwrapDepth)
			assert.Equal(t, int64(want), unwraps.Load(), "UnwrapHost calls")
		})
	}
}

// REF 6.1.3
// A cyclic unwrap chain terminates after MaxUnwrapDepth unwraps.
func TestCapabilityFromHostCycle(t *testing.T) {
	t.Parallel()
	var unwraps atomic.Int64
	a := &decorator{Host: agent.NoopHost{}, unwraps: &unwraps}
	b := &decorator{Host: agent.NoopHost{}, inner: a, unwraps: &unwraps}
	a.inner = b
	_, ok := agent.CapabilityFromHost[agent.SteerSource](a)
	assert.False(t, ok)
	assert.Equal(t, int64(agent.MaxUnwrapDepth), unwraps.Load())

	var selfUnwraps atomic.Int64
	self := &decorator{Host: agent.NoopHost{}, unwraps: &selfUnwraps}
	self.inner = self
	_, ok = agent.CapabilityFromHost[agent.EventBusProvider](self)
	assert.False(t, ok)
	assert.Equal(t, int64(agent.MaxUnwrapDepth), selfUnwraps.Load())
}

// REF 6.1.4
func TestSteerFromHost(t *testing.T) {
	t.Parallel()
	steer := &steerHost{name: "turn"}
	src, ok := agent.SteerFromHost(wrapN(&agent.HostFuncs{Inner: steer}, 2, nil))
	require.True(t, ok)
	assert.Equal(t, "from turn", src.DrainSteer()[0].Text())

	for name, h := range map[string]agent.Host{
		"noop": agent.NoopHost{}, "nil": nil, "typed nil": (*steerHost)(nil), "stopped": stopper{Host: steer},
	} {
		src, ok := agent.SteerFromHost(h)
		assert.False(t, ok, name)
		assert.Nil(t, src, name)
	}
}

// REF 6.1.4
func TestEventBusFromHost(t *testing.T) {
	t.Parallel()
	bus := &fakeBus{name: "gen-1"}
	tests := []struct {
		name  string
		host  agent.Host
		found bool
	}{
		{"provider", busHost{bus: bus}, true},
		{"provider through HostFuncs", &agent.HostFuncs{Inner: busHost{bus: bus}}, true},
		{"provider through decorators", wrapN(busHost{bus: bus}, 4, nil), true},
		{"provider with nil bus", busHost{}, false},
		{"provider with typed-nil bus", busHost{bus: (*fakeBus)(nil)}, false},
		{"a decorator forwarding to a nil-bus provider is no provider", &decorator{Host: busHost{}, inner: busHost{bus: bus}}, true},
		{"noop host", agent.NoopHost{}, false},
		{"nil host", nil, false},
		{"stopped", stopper{Host: busHost{bus: bus}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := agent.EventBusFromHost(tt.host)
			assert.Equal(t, tt.found, ok)
			if tt.found {
				assert.Same(t, bus, got)
			} else {
				assert.Nil(t, got)
			}
		})
	}
}

// shadowHost offers a nil bus itself and unwraps to a host with a bus.
type shadowHost struct {
	agent.NoopHost
	inner agent.Host
}

func (shadowHost) EventBus() event.Bus      { return nil }
func (h shadowHost) UnwrapHost() agent.Host { return h.inner }

// REF 6.1.4
// The first provider found decides, even when its bus is nil.
func TestEventBusFromHostFirstProviderDecides(t *testing.T) {
	t.Parallel()
	h := shadowHost{inner: busHost{bus: &fakeBus{name: "deeper"}}}
	got, ok := agent.EventBusFromHost(h)
	assert.False(t, ok)
	assert.Nil(t, got)
}

// REF 6.1.1
// REF 6.1.2
func TestNoopHost(t *testing.T) {
	t.Parallel()
	var h agent.Host = agent.NoopHost{}
	ctx := context.Background()
	// The Host is the five parts.
	var (
		_ agent.Publisher     = h
		_ agent.Interrupter   = h
		_ agent.UserPrompter  = h
		_ agent.Checkpointer  = h
		_ agent.UsageReporter = h
	)
	assert.NoError(t, h.Publish(ctx, event.Envelope{Subject: "x"}))
	assert.NoError(t, h.Checkpoint(ctx, agent.Checkpoint{}))
	assert.NoError(t, h.ReportUsage(ctx, agent.Usage{TotalTokens: 10}))

	intr := h.Interrupts()
	assert.Nil(t, intr)
	select {
	case <-intr:
		t.Fatal("a nil interrupt channel never fires")
	default:
	}

	reply, err := h.AskUser(ctx, agent.UserPrompt{Parts: []message.Part{message.TextPart("?")}})
	require.Error(t, err)
	assert.ErrorIs(t, err, fault.NotAvailable)
	assert.Equal(t, agent.UserReply{}, reply)

	_, ok := agent.EventBusFromHost(h)
	assert.False(t, ok, "NoopHost offers no EventBus")
	_, ok = agent.SteerFromHost(h)
	assert.False(t, ok)
	_, ok = h.(agent.HostUnwrapper)
	assert.False(t, ok, "NoopHost is not a decorator")
}

// REF 6.1.5
func TestContextWithHost(t *testing.T) {
	t.Parallel()
	h, ok := agent.HostFromContext(context.Background())
	assert.False(t, ok)
	assert.Nil(t, h)

	host := &steerHost{name: "ctx"}
	ctx := agent.ContextWithHost(context.Background(), host)
	got, ok := agent.HostFromContext(ctx)
	require.True(t, ok)
	assert.Same(t, host, got)

	// Derived contexts carry it; an inner ContextWithHost overrides it.
	derived, cancel := context.WithCancel(ctx)
	defer cancel()
	got, ok = agent.HostFromContext(derived)
	require.True(t, ok)
	assert.Same(t, host, got)
	other := &steerHost{name: "other"}
	got, ok = agent.HostFromContext(agent.ContextWithHost(derived, other))
	require.True(t, ok)
	assert.Same(t, other, got)
	got, _ = agent.HostFromContext(ctx)
	assert.Same(t, host, got, "the parent context is unchanged")

	for name, bad := range map[string]agent.Host{"nil": nil, "typed nil": (*steerHost)(nil)} {
		got, ok := agent.HostFromContext(agent.ContextWithHost(ctx, bad))
		assert.False(t, ok, name)
		assert.Nil(t, got, name)
	}
}

// REF 6.1.1
func TestInterruptedError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		intr agent.Interrupt
		msg  string
	}{
		{agent.Interrupt{Cause: agent.CauseUserCancel}, "interrupted: user_cancel"},
		{agent.Interrupt{Cause: agent.CauseUserInput, Detail: "new message"}, "interrupted: user_input: new message"},
		{agent.Interrupt{Cause: agent.CauseHostShutdown}, "interrupted: host_shutdown"},
		{agent.Interrupt{Cause: agent.CauseCustom, Detail: "stop"}, "interrupted: custom: stop"},
	}
	for _, tt := range tests {
		t.Run(string(tt.intr.Cause), func(t *testing.T) {
			t.Parallel()
			err := agent.Interrupted(tt.intr)
			assert.EqualError(t, err, tt.msg)
			wrapped := fmt.Errorf("run r1: %w", err)
			for _, e := range []error{err, wrapped, errors.Join(errors.New("other"), wrapped)} {
				assert.ErrorIs(t, e, fault.Interrupted)
				assert.Equal(t, fault.Interrupted, fault.KindOf(e))
				assert.NotErrorIs(t, e, fault.Aborted)
				var ie *agent.InterruptedError
				require.ErrorAs(t, e, &ie)
				assert.Equal(t, tt.intr, ie.Interrupt)
			}
		})
	}
}
