package event_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 4.1.1
func TestEnvelopeJSONFields(t *testing.T) {
	t.Parallel()
	env := event.Envelope{
		ID: "0123456789abcdefghij", Subject: "a.b", Time: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Source: "src", TraceID: "t1", SpanID: "s1",
		Headers: map[string]string{event.HeaderRunID: "r1"}, Payload: json.RawMessage(`{"k":1}`),
	}
	b, err := json.Marshal(env)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"0123456789abcdefghij","subject":"a.b","time":"2025-01-02T03:04:05Z",
		"source":"src","trace_id":"t1","span_id":"s1","headers":{"run_id":"r1"},"payload":{"k":1}}`, string(b))

	var back event.Envelope
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, env.Payload, back.Payload, "payload stays raw JSON bytes")

	b, err = json.Marshal(event.Envelope{ID: "x", Subject: "a", Time: env.Time})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"x","subject":"a","time":"2025-01-02T03:04:05Z"}`, string(b), "optional fields are omitted")
}

// REF 4.1.1
func TestNewIDShapeOrderAndUniqueness(t *testing.T) {
	t.Parallel()
	const workers, each = 8, 2000
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			ids := make([]string, each)
			for i := range ids {
				ids[i] = event.NewID()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				assert.False(t, seen[id], "duplicate id %s", id)
				seen[id] = true
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, workers*each)

	a := event.NewID()
	time.Sleep(2 * time.Millisecond)
	b := event.NewID()
	assert.Less(t, a, b, "ids sort by creation time")
	for _, id := range []string{a, b} {
		assert.Len(t, id, event.IDLen)
		assert.Regexp(t, `^[0-9a-v]{20}$`, id)
	}
}

// REF 4.1.2
func TestNewEnvelope(t *testing.T) {
	t.Parallel()
	type point struct {
		X int `json:"x"`
	}
	cases := []struct {
		name    string
		payload any
		want    string // "" means no payload bytes
	}{
		{"nil payload gives no bytes", nil, ""},
		{"raw message is used as is", json.RawMessage(`{"raw" : true}`), `{"raw" : true}`},
		{"byte slice is used as is", []byte(`[1,2]`), `[1,2]`},
		{"struct is JSON-encoded", point{X: 3}, `{"x":3}`},
		{"string is JSON-encoded", "hi", `"hi"`},
		{"map is JSON-encoded", map[string]bool{"ok": true}, `{"ok":true}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before := time.Now()
			env, err := event.NewEnvelope(context.Background(), "a.b", c.payload)
			require.NoError(t, err)
			assert.Equal(t, "a.b", env.Subject)
			assert.Len(t, env.ID, event.IDLen)
			assert.False(t, env.Time.Before(before))
			if c.want == "" {
				assert.Nil(t, env.Payload)
			} else {
				assert.Equal(t, c.want, string(env.Payload))
			}
			assert.Empty(t, env.TraceID)
			assert.Empty(t, env.SpanID)
		})
	}
}

// REF 4.1.2
func TestNewEnvelopeErrors(t *testing.T) {
	t.Parallel()
	_, err := event.NewEnvelope(context.Background(), "a..b", nil)
	assert.ErrorIs(t, err, event.ErrInvalidSubject)
	assert.ErrorIs(t, err, fault.Validation)

	_, err = event.NewEnvelope(context.Background(), "a", func() {})
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "encode payload")

	//nolint:staticcheck // a nil ctx is the input under test
	_, err = event.NewEnvelope(nil, "a", nil)
	assert.ErrorIs(t, err, fault.Validation)
}

// REF 4.1.2
func TestNewEnvelopeTraceFromContextSpan(t *testing.T) {
	t.Parallel()
	ctx := event.ContextWithSpan(context.Background(), "trace-1", "span-1")
	sp, ok := event.SpanFromContext(ctx)
	require.True(t, ok)
	assert.Equal(t, event.Span{TraceID: "trace-1", SpanID: "span-1"}, sp)

	env, err := event.NewEnvelope(ctx, "a", nil)
	require.NoError(t, err)
	assert.Equal(t, "trace-1", env.TraceID)
	assert.Equal(t, "span-1", env.SpanID)

	_, ok = event.SpanFromContext(context.Background())
	assert.False(t, ok)
}

// REF 4.1.3
func TestDecode(t *testing.T) {
	t.Parallel()
	out := map[string]int{"kept": 1}
	for _, p := range []json.RawMessage{nil, {}, json.RawMessage("  ")} {
		require.NoError(t, event.Envelope{Subject: "a", Payload: p}.Decode(&out))
		assert.Equal(t, map[string]int{"kept": 1}, out, "an empty payload leaves out untouched")
	}

	var n struct{ N int }
	require.NoError(t, event.Envelope{Payload: json.RawMessage(`{"N":7}`)}.Decode(&n))
	assert.Equal(t, 7, n.N)

	err := event.Envelope{Subject: "a.b", Payload: json.RawMessage(`"text"`)}.Decode(&n)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `"a.b"`)
}

// REF 4.1.4
func TestWellKnownHeaders(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"run_id", "node_id", "agent_id", "graph_id", "tenant", "parent_run_id", "tool_call_id", "session_delivery_cursor"},
		[]string{event.HeaderRunID, event.HeaderNodeID, event.HeaderAgentID, event.HeaderGraphID, event.HeaderTenant,
			event.HeaderParentRunID, event.HeaderToolCallID, event.HeaderDeliveryCursor})

	base := event.Envelope{Subject: "a", Headers: map[string]string{event.HeaderTenant: "t1"}}
	withRun := base.WithHeader(event.HeaderRunID, "r1")
	assert.Equal(t, "r1", withRun.Header(event.HeaderRunID))
	assert.Equal(t, "t1", withRun.Header(event.HeaderTenant))
	assert.Empty(t, base.Header(event.HeaderRunID), "WithHeader leaves the original alone")
}

func TestClone(t *testing.T) {
	t.Parallel()
	env := event.Envelope{Subject: "a", Headers: map[string]string{"k": "v"}, Payload: json.RawMessage(`[1]`)}
	c := env.Clone()
	c.Headers["k"] = "changed"
	c.Payload[1] = '2'
	assert.Equal(t, "v", env.Headers["k"])
	assert.Equal(t, `[1]`, string(env.Payload))
	assert.Nil(t, event.Envelope{}.Clone().Payload)
	assert.True(t, slices.Equal([]byte(`[2]`), c.Payload))
}
