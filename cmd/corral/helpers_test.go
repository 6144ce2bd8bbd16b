package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// waitLimit bounds a wait for output or exit. It only turns a hang into a
// failure that shows what the child printed, never a measure of speed: it
// lasts until shortly before the test binary's own deadline (-timeout), so
// a busy machine that compiles a large WebAssembly module slowly does not
// fail a test that would have passed.
func waitLimit(t *testing.T) time.Duration {
	const fallback = 5 * time.Minute
	deadline, ok := t.Deadline()
	if !ok {
		return fallback
	}
	left := time.Until(deadline)
	if left > 2*time.Minute {
		return left - time.Minute
	}
	return left * 3 / 4
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls buf until it holds want.
func waitFor(t *testing.T, buf *syncBuffer, want string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(buf.String(), want) }, waitLimit(t), 5*time.Millisecond,
		"waiting for %q in:\n%s", want, buf)
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}
