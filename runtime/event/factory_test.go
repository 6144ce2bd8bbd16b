package event_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 4.3.5
func TestFactory(t *testing.T) {
	t.Parallel()
	f := event.NewFactory()
	assert.Equal(t, resource.Spec{Kind: "event.Bus", Impl: "memory"}, f.Spec())
	require.NoError(t, f.Spec().Validate())
	reg := resource.NewRegistry()
	require.NoError(t, reg.Register(f))

	cases := []struct {
		name     string
		settings string
		err      string // "" when valid
	}{
		{"empty", ``, ""},
		{"null", `null`, ""},
		{"defaults", `{}`, ""},
		{"cache cap", `{"route_cache_size": 16}`, ""},
		{"cache off", `{"route_cache_size": 0}`, ""},
		{"buffer", `{"buffer_size": 8}`, ""},
		{"negative cache", `{"route_cache_size": -1}`, "must not be negative"},
		{"zero buffer", `{"buffer_size": 0}`, "outside"},
		{"huge buffer", `{"buffer_size": 1048577}`, "outside"},
		{"unknown key", `{"route_cache": 3}`, "unknown field"},
		{"wrong type", `{"route_cache_size": "big"}`, `route_cache_size: want an integer, got "big"`},
		{"trailing data", `{} {}`, "trailing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			v, err := f.New(context.Background(), resource.Input{Name: "events", Settings: json.RawMessage(c.settings)})
			if c.err != "" {
				assert.ErrorIs(t, err, fault.Validation)
				assert.ErrorContains(t, err, c.err)
				assert.Nil(t, v)
				return
			}
			require.NoError(t, err)
			bus, ok := v.(*event.MemoryBus)
			require.True(t, ok, "the value is a *MemoryBus")
			_, isCloser := v.(io.Closer)
			assert.True(t, isCloser)
			_, isBus := v.(event.Bus)
			assert.True(t, isBus)
			require.NoError(t, bus.Close())
		})
	}
}

// REF 4.3.5
func TestFactoryBufferSizeApplies(t *testing.T) {
	t.Parallel()
	v, err := event.NewFactory().New(context.Background(), resource.Input{Settings: json.RawMessage(`{"buffer_size": 2}`)})
	require.NoError(t, err)
	bus := v.(*event.MemoryBus)
	defer bus.Close()
	sub, err := bus.Subscribe(context.Background(), "a", event.SubConfig{})
	require.NoError(t, err)
	assert.Equal(t, 2, cap(sub.C()))
}
