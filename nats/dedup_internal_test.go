package nats

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// REF 12.1.2.1: the window remembers the last n ids, no more.
func TestIDWindow(t *testing.T) {
	w := newIDWindow(3)
	for i := range 3 {
		assert.True(t, w.add(strconv.Itoa(i)))
	}
	assert.False(t, w.add("0"), "a repeat within the window")
	assert.True(t, w.add("3"), "a new id evicts the oldest")
	assert.True(t, w.add("0"), "an id past the window is new again")
	assert.False(t, w.add("3"))
}
