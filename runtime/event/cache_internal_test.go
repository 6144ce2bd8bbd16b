package event

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 4.3.5
func TestRouteCacheSizeSetting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cfg  BusConfig
		want int // cached subjects after publishing to 10 subjects
	}{
		{"default caps at 1024", BusConfig{}, 10},
		{"positive caps", BusConfig{RouteCacheSize: 3}, 3},
		{"negative turns it off", BusConfig{RouteCacheSize: -1}, 0},
		{"any negative turns it off", BusConfig{RouteCacheSize: -5}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := NewMemoryBusWithConfig(c.cfg)
			defer b.Close()
			_, err := b.Subscribe(context.Background(), ">", SubConfig{})
			require.NoError(t, err)
			for i := range 10 {
				require.NoError(t, b.Publish(context.Background(), Envelope{Subject: fmt.Sprint("s", i)}))
			}
			assert.Equal(t, c.want, b.cache.len())
		})
	}
	assert.Equal(t, DefaultRouteCacheSize, NewMemoryBus().cache.max)
	assert.Equal(t, DefaultRouteCacheSize, NewMemoryBusWithConfig(BusConfig{RouteCacheSize: 0}).cache.max, "zero is the default")
}

// REF 4.3.5
func TestRouteCacheClearedOnSubscribeAndUnsubscribe(t *testing.T) {
	t.Parallel()
	b := NewMemoryBus()
	defer b.Close()
	require.NoError(t, b.Publish(context.Background(), Envelope{Subject: "a"}))
	assert.Equal(t, 1, b.cache.len(), "a subject with no subscribers is cached too")
	sub, err := b.Subscribe(context.Background(), "a", SubConfig{})
	require.NoError(t, err)
	assert.Zero(t, b.cache.len(), "subscribe clears the cache")
	require.NoError(t, b.Publish(context.Background(), Envelope{Subject: "a"}))
	assert.Equal(t, 1, b.cache.len())
	require.NoError(t, sub.Close())
	assert.Zero(t, b.cache.len(), "unsubscribe clears the cache")
}
