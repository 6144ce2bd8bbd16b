package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quietIO is stdio with no input and buffers for the output.
func quietIO() (stdio, *syncBuffer, *syncBuffer) {
	out, errOut := &syncBuffer{}, &syncBuffer{}
	return stdio{in: strings.NewReader(""), out: out, err: errOut}, out, errOut
}

func TestValidateDemo(t *testing.T) {
	t.Parallel()
	sio, out, errOut := quietIO()
	code := run(context.Background(), []string{"validate"}, sio)
	assert.Equal(t, exitOK, code, errOut.String())
	assert.Contains(t, out.String(), "demo/deploy.yaml: ok (generation 1)")
	assert.Contains(t, out.String(), "checkpoints      checkpoint.Store/workspace")
	assert.Contains(t, out.String(), "resume=true")
	assert.Contains(t, out.String(), "demo             Demo (agent.Engine/graph)")
	assert.Contains(t, out.String(), "js               sandbox.Runtime/js")
}

func TestValidateExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join("testdata", "bad.yaml")
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
		{"unknown flag", []string{"validate", "--bogus"}, exitBadInput, "-bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sio, _, errOut := quietIO()
			code := run(context.Background(), tt.args, sio)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, errOut.String(), tt.want)
		})
	}
}

// One convention for help, version and errors, held by the built binary:
// -h, --help and help print the usage on stdout and exit 0, for corral and
// for each command; corral version and --version print the version; an
// error goes to stderr prefixed by "corral: " and exits 2.
func TestCLIConventions(t *testing.T) {
	t.Parallel()
	bin := corralBinary(t)
	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"-h"}, exitOK, "usage:", ""},
		{[]string{"--help"}, exitOK, "corral validate [DOC]", ""},
		{[]string{"help"}, exitOK, "corral version", ""},
		{[]string{"validate", "-h"}, exitOK, "usage: corral validate [DOC]", ""},
		{[]string{"validate", "--help"}, exitOK, "usage: corral validate [DOC]", ""},
		{[]string{"run", "-h"}, exitOK, "usage: corral run [DOC] [flags]", ""},
		{[]string{"version"}, exitOK, "corral ", ""},
		{[]string{"--version"}, exitOK, "corral ", ""},
		{[]string{"fly"}, exitBadInput, "", `corral: unknown command "fly"`},
		{[]string{"validate", "--bogus"}, exitBadInput, "", "corral: validate: flag provided but not defined: -bogus"},
		{[]string{"validate", "a.yaml", "b.yaml"}, exitBadInput, "", "corral: validate: want at most one document"},
		{[]string{"run", "--bogus"}, exitBadInput, "", "corral: "},
	}
	for _, tt := range tests {
		cmd := exec.Command(bin, tt.args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err, "%v", tt.args)
		}
		assert.Equal(t, tt.code, code, "%v: exit code (stderr %q)", tt.args, stderr.String())
		assert.Contains(t, stdout.String(), tt.stdout, "%v: stdout", tt.args)
		assert.Contains(t, stderr.String(), tt.stderr, "%v: stderr", tt.args)
		if tt.code == exitOK {
			assert.Empty(t, stderr.String(), "%v: nothing on stderr", tt.args)
		} else {
			assert.True(t, strings.HasPrefix(stderr.String(), "corral: "), "%v: %q", tt.args, stderr.String())
		}
	}
}

// demoRuntime builds the embedded demo as corral run does; the test's
// cleanup closes it and removes its files.
func demoRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	doc, cleanup, err := loadDocument("")
	require.NoError(t, err)
	t.Cleanup(cleanup)
	app, err := build(context.Background(), doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	return app
}

// The demo agent runs end to end through the library, its prompt answered
// in place: a turn through the session layer, its script nodes in the
// goja sandbox.
func TestDemoRunsThroughTheLibrary(t *testing.T) {
	t.Parallel()
	app := demoRuntime(t)
	lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "demo", ContextID: "t"})
	require.NoError(t, err)
	defer lease.Close()
	turn, err := lease.Session().StartWithConfig(context.Background(),
		agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")},
		session.StartConfig{AskUser: func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
			return agent.UserReply{Parts: []message.Part{message.TextPart("Grace")}}, nil
		}})
	require.NoError(t, err)
	res, err := turn.Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
	require.Len(t, res.Output, 3, "the model's tool call, its answer, the closing line")
	calls := res.Output[0].ToolCalls()
	require.Len(t, calls, 1)
	assert.Equal(t, "word_count", calls[0].Name)
	assert.JSONEq(t, `{"text":"Grace"}`, string(calls[0].Arguments))
	assert.Equal(t, "My tool counted 1 word: Grace.", res.Output[1].Text())
	assert.Equal(t, "That was the scripted model calling a JavaScript tool. Nice to meet you, Grace. "+
		"The conversation holds 5 messages.", res.Output[2].Text())
	assert.Positive(t, res.Usage.TotalTokens, "the model's usage is reported")
}

// The demo waits for a person: its runs are bounded by the run_time its js
// runtime sets, not by the default of its wasm runtime, which sets none,
// and that bound outlasts the wall time its question may wait.
func TestDemoRunBound(t *testing.T) {
	t.Parallel()
	app := demoRuntime(t)
	a, ok := app.Agent("demo")
	require.True(t, ok)
	e, ok := a.Engine.(*graph.Engine)
	require.True(t, ok, "%T", a.Engine)
	assert.Equal(t, 15*time.Minute, e.RunTime(), "the js runtime's run_time, not the wasm runtime's default")
	rt, ok := app.Resource("js")
	require.True(t, ok)
	wait := rt.(*js.Runtime).Limits().WallTime
	assert.Greater(t, e.RunTime(), wait, "the run outlasts the wall time the question waits")
}

// loadDocument extracts the demo into a directory of its own and removes
// it again.
func TestLoadDocumentCleansUp(t *testing.T) {
	t.Parallel()
	doc, cleanup, err := loadDocument("")
	require.NoError(t, err)
	assert.Equal(t, "demo/deploy.yaml", doc.File())
	dir := doc.BaseDir()
	_, err = os.Stat(filepath.Join(dir, "scripts", "greet.js"))
	require.NoError(t, err)
	cleanup()
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err))
}

func TestExitCodeOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		code int
	}{
		{"a document error", &deploy.Error{Pos: deploy.Position{File: "d.yaml", Line: 3}, Err: errors.New("bad")}, exitBadInput},
		{"validation", fault.New(fault.Validation, "run", "bad flag"), exitBadInput},
		{"not found", fault.New(fault.NotFound, "run", "no agent"), exitBadInput},
		{"a missing file", &os.PathError{Op: "open", Path: "x", Err: os.ErrNotExist}, exitBadInput},
		{"canceled, even inside a document error", &deploy.Error{Err: context.Canceled}, exitFailed},
		{"a deadline", fmt.Errorf("build: %w", context.DeadlineExceeded), exitFailed},
		{"internal", fault.New(fault.Internal, "run", "boom"), exitFailed},
		{"no kind", errors.New("boom"), exitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.code, exitCodeOf(tt.err))
		})
	}
}
