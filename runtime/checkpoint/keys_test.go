package checkpoint_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Run ids are "run-" and 16 hex digits, fresh every time.
// REF 7.6
func TestRunKey(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 200 {
		k := checkpoint.RunKey()
		require.Regexp(t, `^run-[0-9a-f]{16}$`, k)
		require.NoError(t, checkpoint.ValidateExecID(k))
		require.False(t, seen[k], "run keys repeat: %s", k)
		seen[k] = true
	}
}

// Session records are "session-" and the first 32 hex digits of
// sha256(agent id, NUL, context id); they cannot collide with run ids.
// REF 7.6
func TestSessionKey(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("assistant\x00c1"))
	want := "session-" + hex.EncodeToString(sum[:])[:32]
	assert.Equal(t, want, checkpoint.SessionKey("assistant", "c1"))
	assert.Equal(t, "session-de2a0b24d4901224739029fb2996b16d", want, "a vector computed by sha256sum")
	assert.Equal(t, "session-", want[:8])
	assert.Regexp(t, `^session-[0-9a-f]{32}$`, checkpoint.SessionKey("", ""))
	assert.Equal(t, checkpoint.SessionKey("a", "b"), checkpoint.SessionKey("a", "b"), "stable")
	assert.NotEqual(t, checkpoint.SessionKey("ab", "c"), checkpoint.SessionKey("a", "bc"), "the NUL keeps the parts apart")
	assert.NotEqual(t, checkpoint.SessionKey("a", "b"), checkpoint.SessionKey("b", "a"))
	require.NoError(t, checkpoint.ValidateExecID(checkpoint.SessionKey("agent/with/slashes", "ctx\\x")))
}
