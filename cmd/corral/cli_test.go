package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidateEmbeddedDefault(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"validate"}, &out, &errOut)
	assert.Equal(t, exitOK, code, errOut.String())
	assert.Contains(t, out.String(), "default.yaml: ok (generation 1)")
	assert.Contains(t, out.String(), "checkpoints      checkpoint.Store/workspace")
	assert.Contains(t, out.String(), "resume=true")
}

func TestValidateExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	assert.NoError(t, os.WriteFile(bad, []byte("version: v1\nresources:\n  events: {kind: event.Bus, impl: memory}\nruntime:\n  event_bus: events\n  sessions: {sink_buffer: 0}\n"), 0o644))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, exitBadInput, "usage"},
		{"unknown command", []string{"fly"}, exitBadInput, `unknown command "fly"`},
		{"missing file", []string{"validate", filepath.Join(dir, "nope.yaml")}, exitBadInput, "nope.yaml"},
		{"bad document names file and line", []string{"validate", bad}, exitBadInput, "bad.yaml:6: runtime.sessions.sink_buffer"},
		{"two documents", []string{"validate", bad, bad}, exitBadInput, "at most one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), tt.args, &out, &errOut)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, errOut.String(), tt.want)
		})
	}
}
