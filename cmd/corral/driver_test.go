package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inProcess runs the run command in this process with a pipe for stdin
// and a channel for signals.
type inProcess struct {
	stdin   *io.PipeWriter
	signals chan os.Signal
	stdout  *syncBuffer
	stderr  *syncBuffer
	code    chan int
}

func startInProcess(t *testing.T, args ...string) *inProcess {
	t.Helper()
	return startTypedAhead(t, "", args...)
}

// startTypedAhead is startInProcess with typed on stdin, a pipe, before
// anything written later.
func startTypedAhead(t *testing.T, typed string, args ...string) *inProcess {
	t.Helper()
	return startInput(t, false, typed, args...)
}

// startInput runs the run command with typed on stdin before anything
// written later; terminal says whether stdin is taken for a terminal.
func startInput(t *testing.T, terminal bool, typed string, args ...string) *inProcess {
	t.Helper()
	r, w := io.Pipe()
	p := &inProcess{stdin: w, signals: make(chan os.Signal, 2), stdout: &syncBuffer{}, stderr: &syncBuffer{}, code: make(chan int, 1)}
	in := io.MultiReader(strings.NewReader(typed), r)
	sio := stdio{in: in, out: p.stdout, err: p.stderr, signals: p.signals, terminal: terminal}
	go func() { p.code <- run(context.Background(), args, sio) }()
	t.Cleanup(func() { _ = w.Close() })
	return p
}

func (p *inProcess) write(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(p.stdin, line+"\n")
	require.NoError(t, err)
}

func (p *inProcess) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case code := <-p.code:
		return code
	case <-time.After(waitLimit(t)):
		t.Fatalf("run did not return; stdout:\n%s\nstderr:\n%s", p.stdout, p.stderr)
		return -1
	}
}

// A /steer line steers, whenever it comes; the line after it waits for
// the question and answers it.
func TestRunSteerThenAnswer(t *testing.T) {
	t.Parallel()
	p := startTypedAhead(t, "/steer mind the time\n/steer\n", "run", "--message", "hi") // an empty steer steers nothing
	waitFor(t, p.stderr, `corral: steered: "mind the time"`)
	p.write(t, "Lin")
	assert.Equal(t, exitOK, p.exitCode(t), p.stderr.String())
	assert.Contains(t, p.stdout.String(), "My tool counted 4 words: Lin, mind, the, time.\n")
	assert.Contains(t, p.stdout.String(),
		`Nice to meet you, Lin. While I ran you told me: "mind the time". The conversation holds 5 messages.`)
	assert.Equal(t, 1, strings.Count(p.stderr.String(), "steered:"))
}

// On a terminal, a line typed while no question is on screen steers the
// turn, and the line typed after the question appears answers it.
func TestRunTerminalSteersUntilAsked(t *testing.T) {
	t.Parallel()
	p := startInput(t, true, "mind the time\n", "run", "--message", "hi")
	waitFor(t, p.stderr, `corral: steered: "mind the time"`)
	waitFor(t, p.stderr, "? What should I call you?")
	p.write(t, "Lin")
	assert.Equal(t, exitOK, p.exitCode(t), p.stderr.String())
	assert.Contains(t, p.stdout.String(), "My tool counted 4 words: Lin, mind, the, time.\n")
	assert.Equal(t, 1, strings.Count(p.stderr.String(), "steered:"))
	assert.NotContains(t, p.stderr.String(), "? What should I call you? Lin", "a terminal echoes the answer itself")
}

// From a pipe, a line that arrives before the question waits for it and
// answers it: echo Ada | corral run. Lines no question took are reported.
func TestRunPipedLineAnswersTheLaterQuestion(t *testing.T) {
	t.Parallel()
	p := startTypedAhead(t, "Ada\nspare\n", "run", "--message", "hi")
	require.NoError(t, p.stdin.Close())
	assert.Equal(t, exitOK, p.exitCode(t), p.stderr.String())
	assert.Contains(t, p.stdout.String(), "Nice to meet you, Ada.")
	assert.Contains(t, p.stderr.String(), "? What should I call you? Ada\n", "the answer is echoed after its question")
	assert.NotContains(t, p.stderr.String(), "steered")
	assert.Contains(t, p.stderr.String(), `corral: 1 line(s) of input not used: no question took them ("/steer TEXT" steers a line)`)
}

// The steer rule of a single line, mode by mode.
func TestSteerText(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{"/steer be brief": "be brief", "/steer": "", "/steer   x ": "x", "/steer\tx": "x"} {
		got, ok := steerText(line)
		assert.True(t, ok, line)
		assert.Equal(t, want, got, line)
	}
	for _, line := range []string{"/steering", "steer x", " /steer x", "Ada"} {
		_, ok := steerText(line)
		assert.False(t, ok, line)
	}
}

// At the end of input the question gets an empty answer.
func TestRunEndOfInputAnswersEmpty(t *testing.T) {
	t.Parallel()
	p := startInProcess(t, "run", "--message", "hi")
	require.NoError(t, p.stdin.Close())
	assert.Equal(t, exitOK, p.exitCode(t), p.stderr.String())
	assert.Contains(t, p.stdout.String(), "Nice to meet you, friend.")
	assert.Contains(t, p.stderr.String(), "? What should I call you? (end of input: no answer)\n")
}

// An answer typed while the prompt is on screen is not a steer, even when
// the end of input follows at once.
func TestRunAnswerThenEndOfInput(t *testing.T) {
	t.Parallel()
	p := startInProcess(t, "run", "--message", "hi")
	waitFor(t, p.stderr, "? What should I call you?")
	p.write(t, "Bo")
	require.NoError(t, p.stdin.Close())
	assert.Equal(t, exitOK, p.exitCode(t), p.stderr.String())
	assert.Contains(t, p.stdout.String(), "My tool counted 1 word: Bo.\nThat was the scripted model calling a JavaScript tool. "+
		"Nice to meet you, Bo. The conversation holds 5 messages.")
	assert.NotContains(t, p.stderr.String(), "steered")
	assert.Contains(t, p.stderr.String(), "? What should I call you? Bo\n", "the answer is echoed after its prompt")
}

func TestRunSignalInterrupts(t *testing.T) {
	t.Parallel()
	p := startInProcess(t, "run", "--message", "hi")
	waitFor(t, p.stderr, "? What should I call you?")
	p.signals <- os.Interrupt
	assert.Equal(t, exitFailed, p.exitCode(t), p.stderr.String())
	assert.Contains(t, p.stderr.String(), "-- interrupted (run-")
	assert.NotContains(t, p.stdout.String(), "Nice to meet you")
}

func TestRunSecondSignalCancels(t *testing.T) {
	t.Parallel()
	p := startInProcess(t, "run", "testdata/spin.yaml", "--agent", "spinner", "--message", "hi")
	waitFor(t, p.stdout, "spinning")
	p.signals <- os.Interrupt
	waitFor(t, p.stderr, "corral: interrupting the turn")
	p.signals <- os.Interrupt
	assert.Equal(t, exitFailed, p.exitCode(t), p.stderr.String())
	assert.Contains(t, p.stderr.String(), "corral: canceling the turn")
	assert.Contains(t, p.stderr.String(), "-- canceled (run-")
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	l := startLines(strings.NewReader("one\ntwo\r\nthree"))
	var got []string
	for line := range l.Lines() {
		got = append(got, line)
	}
	assert.Equal(t, []string{"one", "two", "three"}, got)
	assert.NoError(t, l.Err())
	<-l.Done()
	l.Stop()
	l.Stop() // idempotent
}

func TestLineReaderStop(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	l := startLines(r)
	go func() { _, _ = io.WriteString(w, "a\nb\n") }()
	assert.Equal(t, "a", <-l.Lines())
	l.Stop()
	_ = w.Close()
	select {
	case <-l.Done():
	case <-time.After(waitLimit(t)):
		t.Fatal("the reader did not end after Stop")
	}
}

func TestLineReaderError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	l := startLines(io.MultiReader(strings.NewReader("x\n"), errReader{boom}))
	for range l.Lines() {
	}
	assert.ErrorIs(t, l.Err(), boom)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// A signal that comes before the turn starts abandons the command (or, if
// it lands as the turn starts, interrupts the turn): either way exit 1 and
// no answer.
func TestRunSignalBeforeTheTurn(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	defer w.Close()
	signals := make(chan os.Signal, 1)
	signals <- os.Interrupt
	out, errOut := &syncBuffer{}, &syncBuffer{}
	code := run(context.Background(), []string{"run", "--message", "hi"}, stdio{in: r, out: out, err: errOut, signals: signals})
	assert.Equal(t, exitFailed, code, errOut.String())
	assert.NotContains(t, out.String(), "Nice to meet you")
	abandoned := strings.Contains(errOut.String(), "corral: run: abandoned before the turn started: context canceled")
	interrupted := strings.Contains(errOut.String(), "-- interrupted (run-")
	assert.True(t, abandoned || interrupted, errOut.String())
}

func TestCancelOnSignal(t *testing.T) {
	t.Parallel()
	signals := make(chan os.Signal, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	unwatch := cancelOnSignal(signals, cancel)
	signals <- os.Interrupt
	<-ctx.Done()
	unwatch()
	unwatch() // idempotent

	quiet := make(chan os.Signal, 1)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	cancelOnSignal(quiet, cancel2)()
	quiet <- os.Interrupt
	assert.NoError(t, ctx2.Err(), "a signal after unwatch cancels nothing")
	assert.Len(t, quiet, 1, "and stays in the channel")
}
