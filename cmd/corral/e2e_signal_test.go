//go:build unix

package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ctrl-C while the demo waits for an answer interrupts the turn: exit 1.
func TestCLICtrlCInterrupts(t *testing.T) {
	t.Parallel()
	c := start(t, "run", "--message", "hi", "--json")
	waitFor(t, c.stderr, "? What should I call you?")
	c.signal(t)
	code := c.wait(t)
	assert.Equal(t, exitFailed, code, c.stderr.String())
	assert.Contains(t, c.stderr.String(), "interrupting the turn (Ctrl-C again to cancel it)")
	var got jsonResult
	require.NoError(t, json.Unmarshal([]byte(c.stdout.String()), &got), c.stdout.String())
	assert.Equal(t, "interrupted", got.Status)
	require.NotNil(t, got.Error)
	assert.Equal(t, "interrupted", got.Error.Kind)
}

// A turn that does not stop at an interrupt is canceled by a second
// Ctrl-C.
func TestCLISecondCtrlCCancels(t *testing.T) {
	t.Parallel()
	c := start(t, "run", "testdata/spin.yaml", "--agent", "spinner", "--message", "hi")
	waitFor(t, c.stdout, "spinning")
	c.signal(t)
	waitFor(t, c.stderr, "interrupting the turn")
	c.signal(t)
	code := c.wait(t)
	assert.Equal(t, exitFailed, code, c.stderr.String())
	assert.Contains(t, c.stderr.String(), "corral: canceling the turn")
	assert.Contains(t, c.stderr.String(), "-- canceled (run-")
}
