package graph_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wideDoc is a start node that fans out to the given branch nodes, each
// running the source of the same name, which all lead to "end".
func wideDoc(t *testing.T, branches ...string) *graph.Document {
	t.Helper()
	doc := &graph.Document{Name: "wide", Entry: "start",
		Nodes: []graph.Node{{ID: "start", Type: "script", Config: []byte(`{"source":"set started true"}`)},
			{ID: "end", Type: "script", Config: []byte(`{"source":"set ended true"}`)}}}
	for _, b := range branches {
		doc.Nodes = append(doc.Nodes, graph.Node{ID: b, Type: "script", Config: []byte(`{"source":"` + b + `"}`)})
		doc.Edges = append(doc.Edges, graph.Edge{From: "start", To: b}, graph.Edge{From: b, To: "end"})
	}
	return doc
}

// goNodeType is a node type whose handler is a Go function.
type goNodeType struct {
	name string
	run  func(c *graph.Call) error
}

func (t goNodeType) Name() string { return t.name }

func (t goNodeType) Build(context.Context, graph.NodeInput) (graph.Handler, error) { return t, nil }

func (t goNodeType) Run(_ context.Context, c *graph.Call) error { return t.run(c) }

func parallelOpts(o graph.ParallelOptions) graph.Options {
	o.Enabled = true
	return graph.Options{Parallel: o}
}

// A wave runs in parallel only when enabled, and a wave wider than
// max_branches fails before any branch runs.
func TestParallelMaxBranches(t *testing.T) {
	t.Parallel()
	// REF 5.6.1
	rt := newFake()
	for _, b := range []string{"b1", "b2", "b3"} {
		rt.on(b, func(context.Context, sandbox.Invocation) error { return nil })
	}
	e := buildWith(t, wideDoc(t, "b1", "b2", "b3"), rt, parallelOpts(graph.ParallelOptions{MaxBranches: 2}))
	host, _, err := execute(t, e, nil)
	assert.ErrorIs(t, err, fault.BudgetExceeded)
	assert.ErrorContains(t, err, "a wave of 3 nodes exceeds parallel.max_branches 2")
	assert.Len(t, rt.invocations(), 1, "only start ran: the wave is never cut short")
	assert.NotContains(t, host.Subjects(), event.SubjectParallelFork("run-1"))

	seq := buildWith(t, wideDoc(t, "b1", "b2", "b3"), rt, graph.Options{Parallel: graph.ParallelOptions{MaxBranches: 2}})
	host, _, err = execute(t, seq, nil)
	require.NoError(t, err, "a disabled parallel setting runs the wave in sequence")
	assert.NotContains(t, host.Subjects(), event.SubjectParallelFork("run-1"))
}

// Each branch runs on a private copy of the pre-fork board.
func TestParallelPrivateBoards(t *testing.T) {
	t.Parallel()
	// REF 5.6.2 (a private copy of the pre-fork board per branch)
	rt := newFake().
		on("b1", func(_ context.Context, inv sandbox.Invocation) error {
			inv.Board.Vars["from_b1"] = true
			return nil
		}).
		on("b2", func(_ context.Context, inv sandbox.Invocation) error {
			assert.NotContains(t, inv.Board.Vars, "from_b1", "b2 does not see b1's write")
			assert.Equal(t, true, inv.Board.Vars["started"], "b2 sees the pre-fork board")
			inv.Board.Vars["from_b2"] = true
			return nil
		})
	e := buildWith(t, wideDoc(t, "b1", "b2"), rt, parallelOpts(graph.ParallelOptions{MaxConcurrency: 1}))
	_, board, err := execute(t, e, nil)
	require.NoError(t, err)
	assert.Equal(t, true, board.Vars["from_b1"])
	assert.Equal(t, true, board.Vars["from_b2"])
	assert.Equal(t, true, board.Vars["ended"])
}

// barrier lets n goroutines wait for each other, in generations.
type barrier struct {
	mu    sync.Mutex
	n     int
	count int
	ch    chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, ch: make(chan struct{})} }

// wait blocks until n callers of this generation arrived; it reports
// false when that takes longer than a generous deadline.
func (b *barrier) wait() bool {
	b.mu.Lock()
	ch := b.ch
	b.count++
	if b.count == b.n {
		b.count, b.ch = 0, make(chan struct{})
		close(ch)
	}
	b.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// At most max_concurrency branches run at once.
func TestParallelMaxConcurrency(t *testing.T) {
	t.Parallel()
	// REF 5.6.2 (max_concurrency branches at a time)
	var running, peak atomic.Int32
	pair := newBarrier(2)
	rt := newFake()
	names := []string{"b1", "b2", "b3", "b4"}
	for _, n := range names {
		rt.on(n, func(context.Context, sandbox.Invocation) error {
			cur := running.Add(1)
			for {
				p := peak.Load()
				if cur <= p || peak.CompareAndSwap(p, cur) {
					break
				}
			}
			ok := pair.wait()
			running.Add(-1)
			if !ok {
				return fault.New(fault.Internal, "test", "no partner branch arrived")
			}
			return nil
		})
	}
	e := buildWith(t, wideDoc(t, names...), rt, parallelOpts(graph.ParallelOptions{MaxConcurrency: 2}))
	_, _, err := execute(t, e, nil)
	require.NoError(t, err)
	assert.Equal(t, int32(2), peak.Load())
}

// A branch that outlives branch_timeout fails the wave with Timeout.
func TestParallelBranchTimeout(t *testing.T) {
	t.Parallel()
	// REF 5.6.2 (branch_timeout per branch)
	rt := newFake().
		on("fast", func(context.Context, sandbox.Invocation) error { return nil }).
		on("slow", func(ctx context.Context, _ sandbox.Invocation) error {
			<-ctx.Done()
			return fault.FromContext(ctx.Err(), "slow")
		})
	e := buildWith(t, wideDoc(t, "fast", "slow"), rt, parallelOpts(graph.ParallelOptions{BranchTimeout: 10 * time.Millisecond}))
	_, board, err := execute(t, e, nil)
	assert.ErrorIs(t, err, fault.Timeout)
	assert.ErrorContains(t, err, "parallel.branch_timeout of 10ms exceeded")
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "slow", ne.Node)
	assert.NotContains(t, board.Vars, "ended")
}

// Fork comes first; deltas emitted inside a branch are speculative with
// the fork and branch ids; accepts then join close the wave.
func TestParallelEvents(t *testing.T) {
	t.Parallel()
	// REF 5.6.3 (fork first; speculative deltas with fork_id "<run>#attempt-<n>#iteration-<i>#<firstNode>" and branch_id)
	// REF 5.6.6 (accept per remaining branch, then join)
	e := buildWith(t, loadDoc(t, "fanout.yaml"), newFake(), parallelOpts(graph.ParallelOptions{}))
	run := testRun()
	run.Attempt = 2
	host := newHost()
	_, err := e.Execute(context.Background(), run, host, nil)
	require.NoError(t, err)
	const forkID = "run-1#attempt-2#iteration-1#left"
	var fork, join int
	for i, s := range host.Subjects() {
		switch s {
		case event.SubjectParallelFork("run-1"):
			fork = i
		case event.SubjectParallelJoin("run-1"):
			join = i
		}
	}
	require.Less(t, fork, join)
	ds := deltas(t, host)
	require.Len(t, ds, 4)
	data := map[string]event.StreamDeltaPayload{}
	for _, d := range ds[:2] {
		require.NoError(t, d.Validate())
		assert.True(t, d.Speculative)
		assert.Equal(t, forkID, d.ForkID)
		data[d.BranchID] = d
	}
	assert.Equal(t, "from left", data["left"].Part.Text)
	assert.Equal(t, "from right", data["right"].Part.Text)
	for i, want := range []string{"left", "right"} {
		d := ds[2+i]
		assert.Equal(t, event.DeltaParallelBranchAccept, d.Type)
		assert.Equal(t, forkID, d.ForkID)
		assert.Equal(t, want, d.BranchID)
	}
	var jp event.ParallelPayload
	require.NoError(t, host.Envelopes()[join].Decode(&jp))
	assert.Equal(t, event.ParallelPayload{ForkID: forkID, Branches: []string{"left", "right"}, Graph: "fanout"}, jp)
}

// A branch cancelled with parallel.cancelNode merges as a no-op, does not
// route on, and gets parallel_branch_cancel; cancelNode refuses unknown and
// already cancelled nodes.
func TestParallelCancelNode(t *testing.T) {
	t.Parallel()
	// REF 5.6.4
	// REF 5.4 (parallel.cancelNode returns a bool)
	loserStarted := make(chan struct{})
	rt := newFake().
		on("winner", func(_ context.Context, inv sandbox.Invocation) error {
			<-loserStarted
			require.NotNil(t, inv.Parallel)
			assert.False(t, inv.Parallel("nobody", "x"), "not a branch")
			assert.True(t, inv.Parallel("loser", "winner finished first"))
			assert.False(t, inv.Parallel("loser", "again"), "already cancelled")
			inv.Board.Vars["winner"] = true
			return nil
		}).
		on("loser", func(ctx context.Context, inv sandbox.Invocation) error {
			inv.Board.Vars["loser"] = true
			close(loserStarted)
			<-ctx.Done()
			return fault.FromContext(context.Cause(ctx), "loser")
		})
	doc := wideDoc(t, "winner", "loser")
	doc.Nodes = append(doc.Nodes, graph.Node{ID: "after_loser", Type: "script", Config: []byte(`{"source":"set after_loser true"}`)})
	doc.Edges = append(doc.Edges, graph.Edge{From: "loser", To: "after_loser"})
	e := buildWith(t, doc, rt, parallelOpts(graph.ParallelOptions{}))
	host, board, err := execute(t, e, nil)
	require.NoError(t, err)
	assert.Equal(t, true, board.Vars["winner"])
	assert.NotContains(t, board.Vars, "loser", "the cancelled branch merged as a no-op")
	assert.NotContains(t, board.Vars, "after_loser", "the cancelled branch does not route")
	assert.Equal(t, true, board.Vars["ended"])
	var kinds []string
	for _, d := range deltas(t, host) {
		kinds = append(kinds, string(d.Type)+":"+d.BranchID+":"+d.Reason)
	}
	assert.Equal(t, []string{"parallel_branch_cancel:loser:winner finished first", "parallel_branch_accept:winner:"}, kinds)
	var jp event.ParallelPayload
	for _, env := range host.Envelopes() {
		if env.Subject == event.SubjectParallelJoin("run-1") {
			require.NoError(t, env.Decode(&jp))
		}
	}
	assert.Equal(t, []string{"loser"}, jp.Cancelled)
	cps := host.Checkpoints()
	require.Len(t, cps, 3)
	assert.Equal(t, []string{"winner"}, cps[1].Steps)
}

// A failing branch fails the wave: no merge, a cancel for every branch,
// then join; its siblings are stopped.
func TestParallelFailure(t *testing.T) {
	t.Parallel()
	// REF 5.6.5 (a failed branch: no merge; branches without a terminal get a cancel)
	rt := newFake().
		on("ok", func(ctx context.Context, inv sandbox.Invocation) error {
			inv.Board.Vars["ok"] = true
			<-ctx.Done() // stopped when its sibling fails
			return fault.FromContext(ctx.Err(), "ok")
		}).
		on("bad", func(_ context.Context, inv sandbox.Invocation) error {
			inv.Board.Vars["bad"] = true
			return fault.New(fault.NotFound, "bad", "no such record")
		})
	e := buildWith(t, wideDoc(t, "ok", "bad"), rt, parallelOpts(graph.ParallelOptions{}))
	host, board, err := execute(t, e, nil)
	assert.ErrorIs(t, err, fault.NotFound, "the failing branch's error, not its stopped sibling's")
	var ne *graph.NodeError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "bad", ne.Node)
	assert.NotContains(t, board.Vars, "ok")
	assert.NotContains(t, board.Vars, "bad")
	var kinds []string
	for _, d := range deltas(t, host) {
		kinds = append(kinds, string(d.Type)+":"+d.BranchID)
	}
	assert.Equal(t, []string{"parallel_branch_cancel:ok", "parallel_branch_cancel:bad"}, kinds)
	subs := host.Subjects()
	assert.Equal(t, event.SubjectParallelJoin("run-1"), subs[len(subs)-2])
}

// An interrupted wave is not merged, except the branches' assistant
// messages, kept for the record.
func TestParallelInterrupted(t *testing.T) {
	t.Parallel()
	// REF 5.6.5 (on an interrupt, the branches' assistant messages are merged)
	rt := newFake().
		on("talker", func(_ context.Context, inv sandbox.Invocation) error {
			return runLine(context.Background(), inv, "say partial answer")
		}).
		on("stopper", func(_ context.Context, inv sandbox.Invocation) error {
			inv.Board.Vars["stopper"] = true
			return agent.Interrupted(agent.Interrupt{Cause: agent.CauseUserInput})
		})
	e := buildWith(t, wideDoc(t, "talker", "stopper"), rt, parallelOpts(graph.ParallelOptions{MaxConcurrency: 1}))
	_, board, err := execute(t, e, nil)
	assert.ErrorIs(t, err, fault.Interrupted)
	assert.Equal(t, "stopper", board.Vars[graph.VarInterruptedNode])
	assert.NotContains(t, board.Vars, "stopper")
	main := board.Channel(agent.MainChannel)
	require.Len(t, main, 1)
	assert.Equal(t, "partial answer", main[0].Text())
}

// Var changes merge first-write-wins or last-write-wins in wave order;
// channel appends are added in wave order.
func TestParallelMerge(t *testing.T) {
	t.Parallel()
	// REF 5.6.6
	for _, tt := range []struct {
		strategy graph.MergeStrategy
		want     string
	}{{graph.FirstWriteWins, "b1"}, {graph.LastWriteWins, "b3"}, {"", "b3"}} {
		t.Run(string(tt.strategy), func(t *testing.T) {
			t.Parallel()
			rt := newFake()
			for _, n := range []string{"b1", "b2", "b3"} {
				rt.on(n, func(_ context.Context, inv sandbox.Invocation) error {
					if n != "b2" {
						inv.Board.Vars["winner"] = n
					}
					delete(inv.Board.Vars, "doomed")
					inv.Board.Vars["only_"+n] = true
					return runLine(context.Background(), inv, "say from "+n)
				})
			}
			e := buildWith(t, wideDoc(t, "b1", "b2", "b3"), rt, parallelOpts(graph.ParallelOptions{MergeStrategy: tt.strategy}))
			board := agent.NewBoard()
			board.Vars["winner"], board.Vars["doomed"] = "nobody", true
			board.Append(agent.MainChannel, userMessage("hi"))
			_, out, err := execute(t, e, board)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out.Vars["winner"])
			assert.NotContains(t, out.Vars, "doomed", "a deletion is a change")
			for _, n := range []string{"b1", "b2", "b3"} {
				assert.Equal(t, true, out.Vars["only_"+n])
			}
			var texts []string
			for _, m := range out.Channel(agent.MainChannel) {
				texts = append(texts, m.Text())
			}
			assert.Equal(t, []string{"hi", "from b1", "from b2", "from b3"}, texts)
		})
	}
}

// A branch that rewrites a channel replaces it under the merge strategy;
// the other branches' appends follow.
func TestParallelChannelReplace(t *testing.T) {
	t.Parallel()
	// REF 5.6.6
	rt := newFake().
		on("append", func(_ context.Context, inv sandbox.Invocation) error {
			return runLine(context.Background(), inv, "say appended")
		})
	// A Go node rewrites the board directly: no script can remove a channel.
	rewrite := goNodeType{name: "rewrite", run: func(c *graph.Call) error {
		c.Board.Channels[agent.MainChannel] = nil
		c.Board.Append(agent.MainChannel, userMessage("summary"))
		delete(c.Board.Channels, "scratch")
		return nil
	}}
	doc := wideDoc(t, "rewrite", "append")
	for i := range doc.Nodes {
		if doc.Nodes[i].ID == "rewrite" {
			doc.Nodes[i].Type, doc.Nodes[i].Config = "rewrite", nil
		}
	}
	opts := parallelOpts(graph.ParallelOptions{})
	opts.NodeTypes = []graph.NodeType{rewrite}
	e := buildWith(t, doc, rt, opts)
	board := agent.NewBoard()
	board.Append(agent.MainChannel, userMessage("one"), userMessage("two"))
	board.Append("scratch", userMessage("tmp"))
	_, out, err := execute(t, e, board)
	require.NoError(t, err)
	var texts []string
	for _, m := range out.Channel(agent.MainChannel) {
		texts = append(texts, m.Text())
	}
	assert.Equal(t, []string{"summary", "appended"}, texts)
	assert.NotContains(t, out.Channels, "scratch")
}

// One engine runs many Executes at once, each with parallel waves; every
// run ends with its own, complete board.
func TestConcurrentExecutes(t *testing.T) {
	t.Parallel()
	e := buildWith(t, loadDoc(t, "fanout.yaml"), newFake(), parallelOpts(graph.ParallelOptions{}))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run := testRun()
			run.ID = "run-" + string(rune('a'+i))
			board, err := e.Execute(context.Background(), run, newHost(), nil)
			if err == nil && board.Vars["joined"] != true {
				err = fault.New(fault.Internal, "test", "run %s did not join", run.ID)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
}

// A node that starts a wave is told the board's size the engine measured
// after the last wave (sandbox.Invocation.BoardBytes), so that its runtime
// need not measure it again; a later node of a sequential wave is told the
// size the engine counted from the writes of the node before it, and every
// branch of a parallel wave is told the size of its copy of the board.
func TestBoardBytesHint(t *testing.T) {
	t.Parallel()
	for _, parallel := range []bool{false, true} {
		type seen struct{ hint, actual int64 }
		var mu sync.Mutex
		got := map[string]seen{}
		rt := newFake()
		for _, id := range []string{"b1", "b2"} {
			rt.on(id, func(_ context.Context, inv sandbox.Invocation) error {
				size, err := sandbox.BoardJSONBytes(&inv.Board)
				require.NoError(t, err)
				mu.Lock()
				got[inv.Node] = seen{inv.BoardBytes, size}
				mu.Unlock()
				inv.Board.Vars[inv.Node] = strings.Repeat("x", 100)
				return nil
			})
		}
		opts := graph.Options{}
		if parallel {
			opts = parallelOpts(graph.ParallelOptions{})
		}
		e := buildWith(t, wideDoc(t, "b1", "b2"), rt, opts)
		_, err := e.Execute(context.Background(), testRun(), agenttest.NewHost(), nil)
		require.NoError(t, err)
		hints := map[string]int64{}
		for _, inv := range rt.invocations() {
			hints[inv.Node] = inv.BoardBytes
		}
		assert.Zero(t, hints["start"], "nothing was measured before the first wave")
		assert.Positive(t, got["b1"].hint)
		assert.Equal(t, got["b1"].actual, got["b1"].hint, "parallel %v", parallel)
		assert.Equal(t, got["b2"].actual, got["b2"].hint, "parallel %v: a branch's copy has the pre-fork size; a sequential node the size after b1", parallel)
		end := rt.invocations()[len(rt.invocations())-1]
		require.Equal(t, "end", end.Node)
		size, err := sandbox.BoardJSONBytes(&end.Board)
		require.NoError(t, err)
		assert.Greater(t, end.BoardBytes, got["b1"].hint, "b1 and b2 grew the board")
		assert.LessOrEqual(t, end.BoardBytes, size)
	}
}
