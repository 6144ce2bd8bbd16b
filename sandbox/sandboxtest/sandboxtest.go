package sandboxtest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
)

// Programs are the scripts of the suite for one runtime, by program name.
// A case that needs a program the runtime does not have is skipped.
type Programs map[string]sandbox.Script

// Case is one rule of the sandbox.Runtime contract.
type Case struct {
	Name     string // the subtest's name
	Sentence string // the rule, in one sentence
	// Run checks the rule; env runs the case's programs on the runtime
	// under test.
	Run func(t *testing.T, env *Env)
}

// Run runs every case of Cases as a subtest of t, each against a runtime
// from newRuntime, with the suite's programs for the runtime's name
// (ProgramsFor). Programs of another runtime can be given with
// RunPrograms.
func Run(t *testing.T, newRuntime func(t *testing.T) sandbox.Runtime) {
	t.Helper()
	RunPrograms(t, newRuntime, nil)
}

// RunPrograms is Run with programs: nil means ProgramsFor(rt.Name()).
func RunPrograms(t *testing.T, newRuntime func(t *testing.T) sandbox.Runtime, programs Programs) {
	t.Helper()
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			t.Log("rule: " + c.Sentence)
			rt := newRuntime(t)
			progs := programs
			if progs == nil {
				progs = ProgramsFor(rt.Name())
			}
			c.Run(t, &Env{Runtime: rt, Programs: progs})
		})
	}
}

// Env is what a case runs against: the runtime under test and its
// programs.
type Env struct {
	Runtime  sandbox.Runtime
	Programs Programs
}

// Script returns the program name, or skips t when the runtime has none.
func (e *Env) Script(t *testing.T, name string) sandbox.Script {
	t.Helper()
	s, ok := e.Programs[name]
	if !ok {
		t.Skipf("runtime %q has no program %q", e.Runtime.Name(), name)
	}
	return s
}

// Call is one invocation a case makes. Zero fields take defaults: node
// "node", a fresh board, a NewHost(1), the default grants, the default
// limits, context.Background.
type Call struct {
	Program string
	Node    string
	Config  map[string]any
	Board   *agent.Board
	Host    agent.Host
	// Grants are the agent's capabilities (agent.Run.Capabilities): nil
	// means the host ABI's default set, an empty list grants nothing.
	Grants   []string
	Limits   sandbox.Limits
	Ctx      context.Context
	Parallel func(nodeID, reason string) bool
	// StaticConfig hands Config with the script, as the node's unchanging
	// config (sandbox.Script.Config), rather than with the call.
	StaticConfig bool
	// BoardBytes is the board's size handed to the runtime
	// (sandbox.Invocation.BoardBytes); 0 hands none.
	BoardBytes int64
}

// Result is what an invocation left behind.
type Result struct {
	Err error
	// Board is the call's board with the Outcome's writes applied, as the
	// graph engine applies them.
	Board      *agent.Board
	Outcome    sandbox.Outcome
	Host       agent.Host
	Journal    *hostabi.Journal
	Dispatcher *hostabi.Dispatcher
	// BoardBytes is Board's size as counted while the writes were applied
	// (Writes.ApplyMeasured, from Call.BoardBytes); 0 when it could not be
	// counted exactly.
	BoardBytes int64
}

// RunID is the run id of every invocation the suite makes.
const RunID = "run-1"

// Invoke runs c.Program on the runtime through a hostabi.Dispatcher built
// for the call, and returns what it left behind.
func (e *Env) Invoke(t *testing.T, c Call) Result {
	t.Helper()
	script := e.Script(t, c.Program)
	ctx, inv, res := e.invocation(c, script)
	before := res.Board.Clone()
	out, err := e.Runtime.Invoke(ctx, inv)
	return e.complete(t, before, res, out, err)
}

// complete checks that the runtime left the board it was handed as it was
// (its writes come back in the outcome), then applies the writes.
func (e *Env) complete(t *testing.T, before *agent.Board, res Result, out sandbox.Outcome, err error) Result {
	if !reflect.DeepEqual(before, res.Board) {
		t.Errorf("runtime %q wrote the board it was handed: it must return its writes in the outcome", e.Runtime.Name())
	}
	res.Err, res.Outcome = err, out
	start := int64(0)
	if n, merr := sandbox.BoardJSONBytes(res.Board); merr == nil {
		start = n
	}
	if size, exact := out.Writes.ApplyMeasured(res.Board, start); exact {
		res.BoardBytes = size
	}
	return res
}

func (e *Env) invocation(c Call, script sandbox.Script) (context.Context, sandbox.Invocation, Result) {
	if c.Node == "" {
		c.Node = "node"
	}
	if c.Board == nil {
		c.Board = agent.NewBoard()
	}
	if c.Host == nil {
		c.Host = NewHost(1)
	}
	if c.Ctx == nil {
		c.Ctx = context.Background()
	}
	run := agent.Run{ID: RunID, AgentID: "agent", ContextID: "ctx-1", Capabilities: c.Grants}
	j := hostabi.NewJournal()
	d := hostabi.NewDispatcher(hostabi.Config{Host: c.Host, Run: run, Node: c.Node, Limits: c.Limits, Journal: j})
	inv := sandbox.Invocation{
		Node: c.Node, Type: "script", Script: script, Config: c.Config, Board: *c.Board, ABI: d,
		Run:    sandbox.RunInfo{RunID: run.ID, TaskID: "task-1", AgentID: run.AgentID, ContextID: run.ContextID},
		Limits: c.Limits, Parallel: c.Parallel, BoardBytes: c.BoardBytes,
	}
	if c.StaticConfig {
		inv.Script.Config, inv.Config = c.Config, nil
	}
	return c.Ctx, inv, Result{Board: c.Board, Host: c.Host, Journal: j, Dispatcher: d}
}

// Eval evaluates the expression of program (its Script.Source) over vars.
func (e *Env) Eval(t *testing.T, program string, vars map[string]any, limits sandbox.Limits) (any, error) {
	t.Helper()
	s := e.Script(t, program)
	return e.Runtime.Eval(context.Background(), sandbox.Evaluation{Node: "cond", Expr: s.Source, Vars: vars, Limits: limits})
}

// waitTimeout bounds how long the suite waits for a call that must end by
// itself (a limit must stop it); it is generous, never a timed assertion.
const waitTimeout = 2 * time.Minute

// InvokeBounded is Invoke run on another goroutine; it fails t if the call
// has not returned within a generous bound (a runtime that ignores its
// limits hangs otherwise).
func (e *Env) InvokeBounded(t *testing.T, c Call) Result {
	t.Helper()
	script := e.Script(t, c.Program)
	ctx, inv, res := e.invocation(c, script)
	before := res.Board.Clone()
	type ended struct {
		out sandbox.Outcome
		err error
	}
	done := make(chan ended, 1)
	go func() {
		out, err := e.Runtime.Invoke(ctx, inv)
		done <- ended{out, err}
	}()
	select {
	case end := <-done:
		res = e.complete(t, before, res, end.out, end.err)
	case <-time.After(waitTimeout):
		t.Fatalf("program %q did not stop within %s", c.Program, waitTimeout)
	}
	return res
}
