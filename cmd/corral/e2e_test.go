package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/cmd/corral/internal/demo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// binary is the corral binary the end-to-end tests run, built once per
// test binary into dir (removed by TestMain).
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		_ = os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// corralBinary builds the corral binary on first use.
func corralBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "corral-bin-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "corral")
		args := []string{"build", "-o", binary.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, binary.err)
	return binary.path
}

// child is a running corral process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{}
	err    error // set before exited is closed
}

// start runs the corral binary with args, its stdin a pipe.
func start(t *testing.T, args ...string) *child {
	t.Helper()
	return startWithEnv(t, nil, args...)
}

// startWithEnv is start with env as the environment (nil: this process's).
func startWithEnv(t *testing.T, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(corralBinary(t), args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	c.cmd.Stdout, c.cmd.Stderr, c.cmd.Env = c.stdout, c.stderr, env
	var err error
	c.stdin, err = c.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start())
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
	return c
}

func (c *child) write(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(c.stdin, line+"\n")
	require.NoError(t, err)
}

func (c *child) signal(t *testing.T) {
	t.Helper()
	c.send(t, os.Interrupt)
}

func (c *child) send(t *testing.T, sig os.Signal) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(sig))
}

// wait waits for the process and returns its exit code. Its stdin stays
// open: an end of input would answer the demo's question.
func (c *child) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-c.exited:
	case <-time.After(waitLimit(t)):
		t.Fatalf("corral did not exit; stdout:\n%s\nstderr:\n%s", c.stdout, c.stderr)
	}
	var ee *exec.ExitError
	if errors.As(c.err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, c.err)
	return 0
}

// runCorral runs the binary to the end with stdin closed.
func runCorral(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	c := start(t, args...)
	require.NoError(t, c.stdin.Close())
	code = c.wait(t)
	return c.stdout.String(), c.stderr.String(), code
}

// The demo runs offline, streams its output (script nodes, the scripted
// model, a tool call and its result) and completes; with stdin closed its
// question gets an empty answer.
func TestCLIDemoStreams(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCorral(t, "run", "--message", "hi")
	assert.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "Hello! I am Corral's demo agent: a graph of sandboxed scripts, streaming to you as I run.\n"+
		"(a WebAssembly node checked in)\n"+
		"Let me count the words of what you told me.\n"+
		"[tool call word_count {\"text\":\"hi\"}]\n"+
		"[tool result 1 word: hi]\n"+
		"My tool counted 1 word: hi.\n"+
		"That was the scripted model calling a JavaScript tool. Nice to meet you, friend. The conversation holds 4 messages.\n",
		stdout)
	assert.Contains(t, stderr, "? What should I call you?")
	assert.Regexp(t, `-- completed \(run-[0-9a-f]{16}; tokens: [1-9][0-9]* prompt \+ [1-9][0-9]* completion = [1-9][0-9]*\)\n$`, stderr,
		"the status line shows what the scripted model reported")
}

var runIDPattern = regexp.MustCompile(`run-[0-9a-f]{16}`)

// --json prints one JSON object and nothing else on stdout.
func TestCLIDemoJSON(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCorral(t, "run", "--message", "hi", "--json")
	assert.Equal(t, exitOK, code, stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	assert.ElementsMatch(t, []string{"status", "run_id", "output", "state", "usage", "error"}, keys(got))
	assert.Equal(t, "completed", got["status"])
	assert.Regexp(t, `^run-[0-9a-f]{16}$`, got["run_id"])
	assert.Nil(t, got["error"])
	assert.NotContains(t, stderr, "Hello!", "the stream is not printed with --json")
	golden(t, "demo.json.golden", runIDPattern.ReplaceAll([]byte(stdout), []byte("run-RUNID")))
}

func TestCLIFailedTurnJSON(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCorral(t, "run", "testdata/fail.yaml", "--message", "hi", "--json")
	assert.Equal(t, exitFailed, code, stderr)
	var got jsonResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &got), stdout)
	assert.Equal(t, "failed", got.Status)
	assert.Regexp(t, `^run-[0-9a-f]{16}$`, got.RunID)
	assert.Empty(t, got.Output)
	require.NotNil(t, got.Error)
	assert.Equal(t, "internal", got.Error.Kind)
	assert.Contains(t, got.Error.Message, `node "boom"`)
	assert.Contains(t, got.Error.Message, "Error: the node gave up (at boom:2:7)")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCLIExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"demo completes", []string{"run", "--message", "hi"}, exitOK, "-- completed"},
		{"validate the demo", []string{"validate"}, exitOK, ""},
		{"failed turn", []string{"run", "testdata/fail.yaml", "--message", "hi"}, exitFailed,
			`-- failed (run-`},
		{"turn past its timeout", []string{"run", "testdata/spin.yaml", "--agent", "spinner", "--message", "hi", "--timeout", "100ms"},
			exitFailed, ": timeout: run: the turn ran past --timeout 100ms"},
		{"bad document names file:line", []string{"run", "testdata/bad.yaml", "--message", "hi"}, exitBadInput,
			"testdata/bad.yaml:6: runtime.sessions.sink_buffer"},
		{"validate a bad document", []string{"validate", "testdata/bad.yaml"}, exitBadInput, "testdata/bad.yaml:6:"},
		{"missing document", []string{"run", "testdata/nope.yaml", "--message", "hi"}, exitBadInput, "nope.yaml"},
		{"unknown agent", []string{"run", "--agent", "nobody", "--message", "hi"}, exitBadInput,
			`agent "nobody" is not in demo/deploy.yaml (agents: demo)`},
		{"agent needed", []string{"run", "testdata/spin.yaml", "--message", "hi"}, exitBadInput,
			"--agent is required: testdata/spin.yaml declares idle, spinner"},
		{"unknown flag", []string{"run", "--bogus", "--message", "hi"}, exitBadInput, "flag provided but not defined: -bogus"},
		{"no message", []string{"run"}, exitBadInput, "--message is required"},
		{"bad timeout", []string{"run", "--message", "hi", "--timeout", "soon"}, exitBadInput, `invalid value "soon"`},
		{"unknown command", []string{"fly"}, exitBadInput, `unknown command "fly"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, code := runCorral(t, tt.args...)
			assert.Equal(t, tt.code, code, stderr)
			assert.Contains(t, stderr, tt.stderr)
		})
	}
}

// A /steer line steers the turn; the line typed after the question
// appears answers it. The model's tool call, its reply and the closing
// line show both.
func TestCLISteerAndAnswer(t *testing.T) {
	t.Parallel()
	c := start(t, "run", "--message", "hi")
	c.write(t, "/steer please be brief")
	waitFor(t, c.stderr, "? What should I call you?")
	c.write(t, "Ada")
	code := c.wait(t)
	assert.Equal(t, exitOK, code, c.stderr.String())
	assert.Contains(t, c.stderr.String(), `corral: steered: "please be brief"`)
	out := c.stdout.String()
	assert.Contains(t, out, `[tool call word_count {"text":"Ada\nplease be brief"}]`, "the model reads the answer and the steer")
	assert.Contains(t, out, "My tool counted 4 words: Ada, please, be, brief.\n", "the model's reply uses both")
	assert.Contains(t, out,
		`Nice to meet you, Ada. While I ran you told me: "please be brief". The conversation holds 5 messages.`)
}

// A session's history persists across runs of the same --context: the
// demo's conversation grows from one run to the next, another context
// starts empty, and --fresh deletes the stored session first.
func TestCLIHistoryAndFresh(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	doc, err := demo.Extract(dir)
	require.NoError(t, err)
	holds := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runCorral(t, append([]string{"run", doc, "--message", "hi"}, args...)...)
		require.Equal(t, exitOK, code, stderr)
		m := regexp.MustCompile(`The conversation holds (\d+) messages`).FindStringSubmatch(stdout)
		require.NotNil(t, m, stdout)
		return m[1]
	}
	assert.Equal(t, "4", holds(), "the first run: the user's message, the model's call, the tool's result, its answer")
	assert.Equal(t, "9", holds(), "the second run of the context reads the first's history")
	assert.Equal(t, "4", holds("--context", "other"), "another context has its own history")
	assert.Equal(t, "4", holds("--fresh"), "--fresh deletes the stored session first")
	assert.Equal(t, "9", holds(), "and the context's history starts again from that run")
}

// Piped stdin is predictable however early it arrives: echo Ada | corral
// run answers the question with Ada, and a script steers with /steer
// lines, with no need to wait for the question.
func TestCLIPipedInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, input, answer, steered string
	}{
		{"an answer before the question", "Ada\n", "Ada", ""},
		{"a steer and an answer at once", "/steer keep it short\nAda\n", "Ada", "keep it short"},
		{"an answer before a steer", "Ada\n/steer keep it short\n", "Ada", "keep it short"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := start(t, "run", "--message", "hi")
			_, err := io.WriteString(c.stdin, tt.input)
			require.NoError(t, err)
			require.NoError(t, c.stdin.Close())
			code := c.wait(t)
			require.Equal(t, exitOK, code, c.stderr.String())
			assert.Contains(t, c.stderr.String(), "? What should I call you? "+tt.answer+"\n")
			assert.Contains(t, c.stdout.String(), "Nice to meet you, "+tt.answer+".")
			if tt.steered == "" {
				assert.NotContains(t, c.stderr.String(), "steered")
				return
			}
			assert.Contains(t, c.stderr.String(), fmt.Sprintf("corral: steered: %q", tt.steered))
		})
	}
}
