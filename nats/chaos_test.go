package nats_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The chaos test's environment: a node's process (TestChaosNode) runs
// when chaosNodeEnv names it.
const (
	chaosNodeEnv  = "CORRAL_CHAOS_NODE"
	chaosDelayEnv = "CORRAL_CHAOS_DELAY"
	chaosAgent    = "waves"
)

// waves are the graph's waves, in order (testdata/distributed/chaos).
var waves = []string{"w1", "w2", "slow", "w4", "w5"}

// TestChaosNode is one node of TestChaos, in a process of its own: a
// runtime built from testdata/distributed/chaos that reads commands on
// its stdin ("start <context>", "resume <context>") and reports on its
// stdout ("run <context> <run id>", "done <context> <status> <committed>",
// "err <context> <error>"). It answers its own turns' questions after
// CORRAL_CHAOS_DELAY. Without CORRAL_CHAOS_NODE it does nothing.
func TestChaosNode(t *testing.T) {
	if os.Getenv(chaosNodeEnv) == "" {
		t.Skip("a node of TestChaos, run by it in a process of its own")
	}
	delay, err := time.ParseDuration(os.Getenv(chaosDelayEnv))
	require.NoError(t, err)
	dir, err := filepath.Abs(filepath.Join(docDir, "chaos"))
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "deploy.yaml"))
	require.NoError(t, err)
	doc, _, err := deploy.LoadLayers([]deploy.Layer{{Name: "base", Data: data, File: "deploy.yaml"}}, deploy.ParseConfig{BaseDir: dir})
	require.NoError(t, err)
	app, err := builtin.NewBuilder().Build(context.Background(), doc)
	require.NoError(t, err)
	defer app.Close()

	var outMu sync.Mutex
	say := func(format string, args ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Fprintf(os.Stdout, "chaos "+format+"\n", args...)
	}
	var mu sync.Mutex
	turns := map[string]*session.Turn{}
	detach, err := app.Attach(context.Background(), session.PatternPromptRequested(),
		event.SinkFunc(func(_ context.Context, env event.Envelope) error {
			var p session.PromptRequested
			if err := env.Decode(&p); err != nil {
				return err
			}
			mu.Lock()
			turn := turns[p.RunID]
			mu.Unlock()
			if turn != nil { // another node's turns are not this node's to answer
				time.AfterFunc(delay, func() {
					_ = turn.Reply(context.Background(), p.PromptID, agent.UserReply{Parts: []message.Part{message.TextPart("yes")}})
				})
			}
			return nil
		}))
	require.NoError(t, err)
	defer detach()

	var running sync.WaitGroup
	lines := bufio.NewScanner(os.Stdin)
	for lines.Scan() {
		verb, contextID, _ := strings.Cut(lines.Text(), " ")
		running.Go(func() {
			key := session.Key{AgentID: chaosAgent, ContextID: contextID}
			lease, err := app.Sessions().Open(context.Background(), key)
			if err != nil {
				say("err %s %v", contextID, err)
				return
			}
			defer lease.Close()
			var turn *session.Turn
			mu.Lock() // the turn is registered before its first question can arrive
			if verb == "start" {
				turn, err = lease.Session().Start(context.Background(), agent.Request{Message: message.NewTextMessage(message.RoleUser, "go")})
			} else {
				turn, err = resumeWhenFree(lease.Session())
			}
			if err == nil {
				turns[turn.RunID()] = turn
			}
			mu.Unlock()
			if verb == "resume" && errors.Is(err, fault.NotFound) {
				// The turn committed before its node died, which did not live
				// to say so: nothing is parked.
				say("gone %s -", contextID)
				return
			}
			if err != nil {
				say("err %s %v", contextID, err)
				return
			}
			say("run %s %s", contextID, turn.RunID())
			res, err := turn.Wait(context.Background())
			if err != nil {
				say("err %s %v", contextID, err)
				return
			}
			say("done %s %s %t", contextID, res.Status, res.Committed)
		})
	}
	running.Wait()
}

// resumeWhenFree resumes s's parked run once the dead node's lease on it
// has lapsed: an owned key is asked again every 20 ms, for at most a
// minute.
func resumeWhenFree(s *session.Session) (*session.Turn, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		turn, err := s.Resume(context.Background())
		var owned *session.OwnedError
		if !errors.As(err, &owned) || time.Now().After(deadline) {
			return turn, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chaosNode is a node's process as TestChaos sees it.
type chaosNode struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	done chan struct{} // closed once its stdout ends
}

func (n *chaosNode) send(verb, contextID string) error {
	_, err := fmt.Fprintf(n.in, "%s %s\n", verb, contextID)
	return err
}

// chaosReport is one line a node reported.
type chaosReport struct {
	node, verb, contextID, rest string
	at                          time.Time
}

// spawn starts a node's process; its reports go to reports.
func spawn(t *testing.T, name, url string, delay time.Duration, reports chan<- chaosReport) *chaosNode {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChaosNode$", "-test.count=1")
	cmd.Env = append(os.Environ(), chaosNodeEnv+"="+name, chaosDelayEnv+"="+delay.String(),
		"CORRAL_NATS_URL="+url, "CORRAL_NODE="+name)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	n := &chaosNode{name: name, cmd: cmd, in: in, done: make(chan struct{})}
	go func() {
		defer close(n.done)
		defer func() {
			select { // an exit nobody waits for is the test's end
			case reports <- chaosReport{node: name, verb: "exit", at: time.Now()}:
			default:
			}
		}()
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			rest, ok := strings.CutPrefix(lines.Text(), "chaos ")
			if !ok { // the test binary's own report: a failing node says why
				fmt.Fprintf(os.Stderr, "node %s: %s\n", name, lines.Text())
				continue
			}
			f := strings.SplitN(rest, " ", 3)
			if len(f) == 3 {
				reports <- chaosReport{node: name, verb: f[0], contextID: f[1], rest: f[2], at: time.Now()}
			}
		}
	}()
	t.Cleanup(func() {
		_ = in.Close()
		select {
		case <-n.done:
		case <-time.After(wait):
			_ = cmd.Process.Kill()
		}
		_ = cmd.Wait()
	})
	return n
}

// waveLog follows the wave events with a cursor, as a client would.
type waveLog struct {
	mu     sync.Mutex
	ids    map[string]int            // envelope id -> deliveries
	counts map[string]map[string]int // run id -> wave -> executions
	cursor uint64
}

func (l *waveLog) follow(t *testing.T, bus *nats.Bus) (stop func()) {
	t.Helper()
	l.mu.Lock()
	after := l.cursor
	l.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	sub, err := bus.SubscribeFrom(ctx, "agent.run.*.custom.wave", after, event.SubConfig{})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for env := range sub.C() {
			var p struct {
				Wave string `json:"wave"`
			}
			_ = env.Decode(&p)
			run := strings.Split(env.Subject, ".")[2]
			c, _ := nats.Cursor(env)
			l.mu.Lock()
			l.ids[env.ID]++
			if l.counts[run] == nil {
				l.counts[run] = map[string]int{}
			}
			l.counts[run][p.Wave]++
			l.cursor = c
			l.mu.Unlock()
		}
	}()
	return func() { cancel(); sub.Close(); <-done }
}

func (l *waveLog) of(run string) map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return copyCounts(l.counts[run])
}

func copyCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// REF 12.6.3, 12.6.2, 12.2.1, 12.2.2: three nodes, each a process of its
// own, run turns of a five-wave graph on a shared three-server cluster;
// one node is killed (SIGKILL) while its turns wait in the slow wave.
// Every turn it ran is resumed by another node, from its last checkpoint,
// and completes: the board holds every wave, no wave that was committed
// before the kill runs again (only the wave in flight may run twice),
// the turns of the other nodes run each wave once, and a client following
// the wave events with a cursor, a new subscription each round from the
// last cursor, sees each event once. Repeated rounds >= 20 (3 under
// -short), with 50 sessions a round (12 under -short).
func TestChaos(t *testing.T) {
	rounds, sessions := 20, 50
	if testing.Short() {
		rounds, sessions = 3, 12
	}
	const delay = 600 * time.Millisecond
	servers := natstest.Cluster(t, 3)
	url := natstest.URLs(servers)
	observer := connect(t, url, "observer", func(c *nats.Config) { c.Replicas, c.LeaseTTL = 3, leaseTTL })
	store := observer.Checkpoints(checkpoint.Policy{})
	reports := make(chan chaosReport, 4*sessions)
	names := []string{"a", "b", "c"}
	nodes := make([]*chaosNode, 3)
	for i, name := range names {
		nodes[i] = spawn(t, name+"0", url, delay, reports)
	}
	log := &waveLog{ids: map[string]int{}, counts: map[string]map[string]int{}}
	var takeovers []time.Duration
	for round := range rounds {
		stop := log.follow(t, observer)
		victim := round % 3
		owner := map[string]int{}    // context -> node index
		runOf := map[string]string{} // context -> run id
		done := map[string]bool{}
		gone := map[string]bool{} // committed on the victim, which died before it said so
		contexts := make([]string, sessions)
		for i := range sessions {
			contexts[i] = fmt.Sprintf("r%d-s%d", round, i)
			owner[contexts[i]] = i % 3
			require.NoError(t, nodes[i%3].send("start", contexts[i]))
		}
		handle := func(r chaosReport) {
			switch r.verb {
			case "run":
				runOf[r.contextID] = r.rest
			case "gone":
				gone[r.contextID] = true
				done[r.contextID] = true
			case "done":
				require.Equal(t, string(agent.StatusCompleted)+" true", r.rest, "session %s on %s", r.contextID, r.node)
				done[r.contextID] = true
			case "err":
				require.Failf(t, "a node failed", "%s on %s: %s", r.contextID, r.node, r.rest)
			case "exit":
				require.Failf(t, "a node exited", "node %s", r.node)
			}
		}
		next := func(what string) chaosReport {
			select {
			case r := <-reports:
				return r
			case <-time.After(wait):
				require.FailNow(t, "timed out", "round %d: %s", round, what)
				return chaosReport{}
			}
		}
		// The victim's turns all wait in the slow wave (or are done).
		for deadline := time.Now().Add(wait); ; {
			require.True(t, time.Now().Before(deadline), "round %d: the turns never reached the slow wave", round)
			mid := 0
			for _, c := range contexts {
				if owner[c] == victim && (done[c] || runOf[c] != "" && log.of(runOf[c])["slow"] > 0) {
					mid++
				}
			}
			if mid == len(slices.DeleteFunc(slices.Clone(contexts), func(c string) bool { return owner[c] != victim })) {
				break
			}
			select {
			case r := <-reports:
				handle(r)
			case <-time.After(10 * time.Millisecond):
			}
		}
		time.Sleep(time.Duration(rand.Int64N(int64(delay / 2))))
		require.NoError(t, nodes[victim].cmd.Process.Kill())
		killed := time.Now()
		<-nodes[victim].done
		_ = nodes[victim].cmd.Wait()
		for len(reports) > 0 { // what the victim said before it died
			if r := <-reports; r.verb != "exit" || r.node != nodes[victim].name {
				handle(r)
			}
		}
		var affected []string
		for _, c := range contexts {
			if owner[c] == victim && !done[c] {
				affected = append(affected, c)
			}
		}
		origRun := map[string]string{}
		for i, c := range affected {
			survivor := (victim + 1 + i%2) % 3
			owner[c] = survivor
			origRun[c] = runOf[c]
			require.NoError(t, nodes[survivor].send("resume", c))
		}
		resumedRun := map[string]string{}
		for len(done) < sessions {
			r := next(fmt.Sprintf("%d of %d sessions done", len(done), sessions))
			if r.verb == "run" && slices.Contains(affected, r.contextID) {
				takeovers = append(takeovers, r.at.Sub(killed))
				resumedRun[r.contextID] = r.rest
			}
			handle(r)
		}
		// Every session's record holds every wave; the wave events say
		// which ran how often.
		for _, c := range contexts {
			rec, err := store.Load(context.Background(), session.SessionRecordID(session.Key{AgentID: chaosAgent, ContextID: c}))
			require.NoError(t, err)
			require.NotNil(t, rec, "session %s has a record", c)
			for _, w := range waves {
				require.NotNil(t, rec.Board.Vars[w], "session %s lost wave %s", c, w)
			}
			eventually(t, "the wave events of "+c, func() bool { return log.of(runOf[c])["w5"] > 0 })
			counts := log.of(runOf[c])
			twice := 0
			for _, w := range waves {
				n := counts[w]
				require.GreaterOrEqual(t, n, 1, "session %s: wave %s never ran", c, w)
				require.LessOrEqual(t, n, 2, "session %s: wave %s ran %d times", c, w, n)
				if n == 2 {
					twice++
				}
			}
			if !slices.Contains(affected, c) {
				require.Zero(t, twice, "session %s was not on the killed node: %v", c, counts)
			} else {
				if !gone[c] {
					assert.Equal(t, origRun[c], resumedRun[c], "session %s resumed its own run", c)
				}
				require.LessOrEqual(t, twice, 1, "session %s: only the wave in flight may run again: %v", c, counts)
			}
		}
		stop()
		log.mu.Lock()
		for id, n := range log.ids {
			require.Equal(t, 1, n, "event %s delivered %d times", id, n)
		}
		log.mu.Unlock()
		t.Logf("round %d: node %s killed, %d sessions resumed elsewhere (%d had committed unheard)", round, names[victim], len(affected)-len(gone), len(gone))
		nodes[victim] = spawn(t, fmt.Sprintf("%s%d", names[victim], round+1), url, delay, reports)
	}
	slices.Sort(takeovers)
	if n := len(takeovers); n > 0 {
		t.Logf("takeover after a kill (%d sessions): min %s, p50 %s, p90 %s, max %s", n,
			takeovers[0], takeovers[n/2], takeovers[n*9/10], takeovers[n-1])
	}
}
