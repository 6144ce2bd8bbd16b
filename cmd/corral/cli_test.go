package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateEmbeddedDefault(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"validate"}, &out, &errOut)
	assert.Equal(t, exitOK, code, errOut.String())
	assert.Contains(t, out.String(), "default.yaml: ok (generation 1)")
	assert.Contains(t, out.String(), "checkpoints      checkpoint.Store/workspace")
	assert.Contains(t, out.String(), "resume=true")
	assert.Contains(t, out.String(), "greeter          Greeter (agent.Engine/graph)")
	assert.Contains(t, out.String(), "js               sandbox.Runtime/js")
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

// The embedded default deployment's agent runs end to end: a turn through
// the session layer, its script nodes in the goja sandbox.
func TestDefaultGreeterRuns(t *testing.T) {
	doc, cleanup, err := loadDocument("")
	require.NoError(t, err)
	defer cleanup()
	app, err := runtime.NewBuilder(registry()).Build(context.Background(), doc)
	require.NoError(t, err)
	defer app.Close()
	lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "greeter", ContextID: "t"})
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().Start(context.Background(),
		agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")})
	require.NoError(t, err)
	res, err := turn.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
	require.Len(t, res.Output, 1)
	assert.Equal(t, "I have 1 messages on the board.", res.Output[0].Text())
}
