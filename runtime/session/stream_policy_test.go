package session

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 2.4.16
func TestStreamPolicyContext(t *testing.T) {
	t.Parallel()
	_, ok := StreamPolicyFromContext(context.Background())
	assert.False(t, ok)
	_, ok = StreamPolicyFromContext(nil) // a nil ctx carries nothing
	assert.False(t, ok)

	sinks := []SinkSpec{okSpec("a"), okSpec("b")}
	ctx := ContextWithStreamPolicy(context.Background(), StreamPolicy{Sinks: sinks, Inheritable: true})
	sinks[0].ID = "changed"
	got, ok := StreamPolicyFromContext(ctx)
	require.True(t, ok)
	assert.True(t, got.Inheritable)
	require.Len(t, got.Sinks, 2)
	assert.Equal(t, "a", got.Sinks[0].ID, "the ctx keeps its own copy")
	got.Sinks[1].ID = "mine"
	again, _ := StreamPolicyFromContext(ctx)
	assert.Equal(t, "b", again.Sinks[1].ID, "each reader gets its own slice")

	boundary := ContextWithStreamPolicy(ctx, StreamPolicy{Sinks: again.Sinks})
	inner, ok := StreamPolicyFromContext(boundary)
	require.True(t, ok)
	assert.False(t, inner.Inheritable, "a boundary overrides the policy")
	assert.Nil(t, inner.Inherited())
}

// Inherited sinks are observers: no authority, no explicit ack, no window.
//
// REF 2.4.16
func TestStreamPolicyInherited(t *testing.T) {
	t.Parallel()
	detached := 0
	auth := SinkSpec{ID: "ui", Sink: nopSink, QueueSize: 9, DeliveryTimeout: time.Second, OnDetach: func(error) { detached++ },
		Visibility: VisibilityConfirmed, Authority: AuthorityAuthoritative, AckMode: AckExplicit, MaxUnacked: 3}
	raw := okSpec("log")
	p := StreamPolicy{Sinks: []SinkSpec{auth, raw}, Inheritable: true}
	got := p.Inherited()
	require.Len(t, got, 2)
	ui := got[0]
	assert.Equal(t, AuthorityObserver, ui.Authority)
	assert.Equal(t, AckOnDelivery, ui.AckMode)
	assert.Zero(t, ui.MaxUnacked)
	assert.Equal(t, VisibilityConfirmed, ui.Visibility, "visibility is kept")
	assert.Equal(t, 9, ui.QueueSize)
	assert.Equal(t, time.Second, ui.DeliveryTimeout)
	ui.OnDetach(nil)
	assert.Equal(t, 1, detached, "OnDetach is kept")
	assert.Equal(t, raw.ID, got[1].ID)
	require.NoError(t, ValidateSinks(got))
	assert.Equal(t, AuthorityAuthoritative, p.Sinks[0].Authority, "the policy's own sinks are unchanged")

	assert.Nil(t, StreamPolicy{Sinks: p.Sinks}.Inherited(), "not inheritable")
	assert.Nil(t, StreamPolicy{Inheritable: true}.Inherited(), "no sinks")
}
