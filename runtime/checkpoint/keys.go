package checkpoint

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// Key prefixes of the records the runtime keeps. They cannot collide with
// each other or with prompt ids, which are bare hex.
const (
	RunKeyPrefix     = "run-"
	SessionKeyPrefix = "session-"
)

// RunKey returns a fresh run id: "run-" and 16 random hex digits. A run's
// checkpoints are stored under its run id.
func RunKey() string { return RunKeyPrefix + randomHex() }

// SessionKey returns the key of a session's durable record: "session-" and
// the first 32 hex digits (16 bytes) of the SHA-256 of agentID, a NUL byte
// and contextID. The NUL keeps ("ab", "c") and ("a", "bc") apart.
func SessionKey(agentID, contextID string) string {
	h := sha256.New()
	h.Write([]byte(agentID))
	h.Write([]byte{0})
	h.Write([]byte(contextID))
	sum := h.Sum(nil)
	return SessionKeyPrefix + hex.EncodeToString(sum[:16])
}

// randomHex returns 16 random hex digits.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
