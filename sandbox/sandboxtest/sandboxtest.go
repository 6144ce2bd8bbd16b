package sandboxtest

import (
	"context"
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
	// StaticConfig marks Config as the node's unchanging config
	// (sandbox.Invocation.StaticConfig).
	StaticConfig bool
	// BoardBytes is the board's size handed to the runtime
	// (sandbox.Invocation.BoardBytes); 0 hands none.
	BoardBytes int64
}

// Result is what an invocation left behind.
type Result struct {
	Err        error
	Board      *agent.Board
	Host       agent.Host
	Journal    *hostabi.Journal
	Dispatcher *hostabi.Dispatcher
	// BoardBytesAfter is the board's size the runtime reported
	// (sandbox.Invocation.BoardBytesAfter); 0 when it reported none.
	BoardBytesAfter int64
}

// RunID is the run id of every invocation the suite makes.
const RunID = "run-1"

// Invoke runs c.Program on the runtime through a hostabi.Dispatcher built
// for the call, and returns what it left behind.
func (e *Env) Invoke(t *testing.T, c Call) Result {
	t.Helper()
	script := e.Script(t, c.Program)
	ctx, inv, res := e.invocation(c, script)
	res.Err = e.Runtime.Invoke(ctx, inv)
	res.BoardBytesAfter = *inv.BoardBytesAfter
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
		Node: c.Node, Type: "script", Script: script, Config: c.Config, Board: c.Board, ABI: d,
		Run:    sandbox.RunInfo{RunID: run.ID, TaskID: "task-1", AgentID: run.AgentID, ContextID: run.ContextID},
		Limits: c.Limits, Parallel: c.Parallel, StaticConfig: c.StaticConfig,
		BoardBytes: c.BoardBytes, BoardBytesAfter: new(int64),
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
	done := make(chan error, 1)
	go func() { done <- e.Runtime.Invoke(ctx, inv) }()
	select {
	case res.Err = <-done:
		res.BoardBytesAfter = *inv.BoardBytesAfter
	case <-time.After(waitTimeout):
		t.Fatalf("program %q did not stop within %s", c.Program, waitTimeout)
	}
	return res
}
