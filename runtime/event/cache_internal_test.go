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
		opts []BusOption
		want int // cached subjects after publishing to 10 subjects
	}{
		{"default caps at 1024", nil, 10},
		{"positive caps", []BusOption{WithRouteCacheSize(3)}, 3},
		{"zero turns it off", []BusOption{WithRouteCacheSize(0)}, 0},
		{"negative counts as off", []BusOption{WithRouteCacheSize(-5)}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := NewMemoryBus(c.opts...)
			defer b.Close()
			_, err := b.Subscribe(context.Background(), ">")
			require.NoError(t, err)
			for i := range 10 {
				require.NoError(t, b.Publish(context.Background(), Envelope{Subject: fmt.Sprint("s", i)}))
			}
			assert.Equal(t, c.want, b.cache.len())
		})
	}
	assert.Equal(t, DefaultRouteCacheSize, NewMemoryBus().cache.max)
}

// REF 4.3.5
func TestRouteCacheClearedOnSubscribeAndUnsubscribe(t *testing.T) {
	t.Parallel()
	b := NewMemoryBus()
	defer b.Close()
	require.NoError(t, b.Publish(context.Background(), Envelope{Subject: "a"}))
	assert.Equal(t, 1, b.cache.len(), "a subject with no subscribers is cached too")
	sub, err := b.Subscribe(context.Background(), "a")
	require.NoError(t, err)
	assert.Zero(t, b.cache.len(), "subscribe clears the cache")
	require.NoError(t, b.Publish(context.Background(), Envelope{Subject: "a"}))
	assert.Equal(t, 1, b.cache.len())
	require.NoError(t, sub.Close())
	assert.Zero(t, b.cache.len(), "unsubscribe clears the cache")
}
