package nats_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docDir holds the document that runs on one machine or on many.
var docDir = filepath.Join("..", "testdata", "distributed")

// loadDoc loads deploy.yaml, with the nats.yaml layer over it when
// distributed is set.
func loadDoc(t *testing.T, distributed bool) *deploy.Document {
	t.Helper()
	if distributed {
		return loadDocWith(t, "")
	}
	dir := absDir(t)
	doc, _, err := deploy.LoadLayers([]deploy.Layer{{Name: "base", Data: read(t, dir, "deploy.yaml"), File: "deploy.yaml"}},
		deploy.ParseConfig{BaseDir: dir})
	require.NoError(t, err)
	return doc
}

// loadDocWith loads deploy.yaml with the nats.yaml layer over it and,
// unless it is empty, the YAML text extra over both.
func loadDocWith(t *testing.T, extra string) *deploy.Document {
	t.Helper()
	dir := absDir(t)
	layers := []deploy.Layer{
		{Name: "base", Data: read(t, dir, "deploy.yaml"), File: "deploy.yaml"},
		{Name: "nats", Priority: 1, Data: read(t, dir, "nats.yaml"), File: "nats.yaml"},
	}
	if extra != "" {
		layers = append(layers, deploy.Layer{Name: "extra", Priority: 2, Data: []byte(extra)})
	}
	doc, _, err := deploy.LoadLayers(layers, deploy.ParseConfig{BaseDir: dir})
	require.NoError(t, err)
	return doc
}

func absDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(docDir)
	require.NoError(t, err)
	return dir
}

func read(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	require.NoError(t, err)
	return b
}

// node is one runtime of the deployment with the prompts its turns ask.
type node struct {
	app   *runtime.Runtime
	mu    sync.Mutex
	asked map[string]chan string // run id -> prompt ids
}

// build builds doc as a node, the environment of the document set to
// url and name (the document reads them when it is built).
func build(t *testing.T, doc *deploy.Document, url, name string) *node {
	t.Helper()
	t.Setenv("CORRAL_NATS_URL", url)
	t.Setenv("CORRAL_NODE", name)
	t.Setenv("CORRAL_DATA_DIR", t.TempDir())
	app, err := builtin.NewBuilder().Build(context.Background(), doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	n := &node{app: app, asked: map[string]chan string{}}
	detach, err := app.Attach(context.Background(), session.PatternPromptRequested(),
		event.SinkFunc(func(_ context.Context, env event.Envelope) error {
			var p session.PromptRequested
			if err := env.Decode(&p); err != nil {
				return err
			}
			n.prompts(p.RunID) <- p.PromptID
			return nil
		}))
	require.NoError(t, err)
	t.Cleanup(detach)
	return n
}

// takesOver checks that lost, a turn whose node lost its lease, stops
// with NotAvailable (why says how it lost it), and that n then takes key
// over and completes a turn answered with name.
func takesOver(t *testing.T, lost *session.Turn, n *node, key session.Key, name, why string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := lost.Wait(ctx)
	require.ErrorIs(t, err, fault.NotAvailable, why)
	assert.Equal(t, session.TurnCanceled, lost.State())

	var turn *session.Turn
	eventually(t, "the other node takes the key over", func() bool {
		var err error
		turn, err = n.start(t, key)
		return err == nil
	})
	assert.Equal(t, agent.StatusCompleted, answer(t, n, turn, name).Status)
}

// hears waits until n receives the live events from's node publishes: a
// node's subscription reaches the other servers of a cluster a moment
// after it is made, and core NATS delivers nothing to a subscription a
// server has not heard of yet (a cursor reads the stream instead).
func hears(t *testing.T, n, from *node) {
	t.Helper()
	got := make(chan struct{}, 1)
	detach, err := n.app.Attach(context.Background(), "test.probe", event.SinkFunc(func(context.Context, event.Envelope) error {
		select {
		case got <- struct{}{}:
		default:
		}
		return nil
	}))
	require.NoError(t, err)
	defer detach()
	bus, _ := from.app.Resource("events")
	eventually(t, "the other node hears this one", func() bool {
		env, err := event.NewEnvelope(context.Background(), "test.probe", 1)
		require.NoError(t, err)
		require.NoError(t, bus.(*nats.Bus).Publish(context.Background(), env))
		select {
		case <-got:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	})
}

func (n *node) prompts(runID string) chan string {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch := n.asked[runID]
	if ch == nil {
		ch = make(chan string, 4)
		n.asked[runID] = ch
	}
	return ch
}

// start starts a turn on key, or returns the refusal.
func (n *node) start(t *testing.T, key session.Key) (*session.Turn, error) {
	t.Helper()
	lease, err := n.app.Sessions().Open(context.Background(), key)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lease.Close() })
	return lease.Session().Start(context.Background(), agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")})
}

// asks waits until turn asks its question and returns the prompt id.
func (n *node) asks(t *testing.T, turn *session.Turn) string {
	t.Helper()
	select {
	case id := <-n.prompts(turn.RunID()):
		return id
	case <-time.After(wait):
		t.Fatalf("run %s never asked", turn.RunID())
		return ""
	}
}

// answer waits for the turn's question, replies and waits for its result.
func answer(t *testing.T, n *node, turn *session.Turn, name string) *agent.Result {
	t.Helper()
	return replyTo(t, turn, n.asks(t, turn), name)
}

// replyTo replies to prompt id of turn and waits for its result.
func replyTo(t *testing.T, turn *session.Turn, id, name string) *agent.Result {
	t.Helper()
	require.NoError(t, turn.Reply(context.Background(), id, agent.UserReply{Parts: []message.Part{message.TextPart(name)}}))
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	return res
}

// REF 12.5.1: the same document runs on one machine, with the memory bus.
func TestDocumentOnOneMachine(t *testing.T) {
	n := build(t, loadDoc(t, false), "", "")
	bus, ok := n.app.Resource("events")
	require.True(t, ok)
	_, isMemory := bus.(*event.MemoryBus)
	assert.True(t, isMemory)
	turn, err := n.start(t, session.Key{AgentID: "concierge", ContextID: "c1"})
	require.NoError(t, err)
	res := answer(t, n, turn, "Ada")
	assert.Equal(t, agent.StatusCompleted, res.Status)
	require.NotEmpty(t, res.Output)
	assert.Contains(t, res.Output[len(res.Output)-1].Text(), "Nice to meet you, Ada.")
}

// REF 12.5.1, 12.5.2: the same base document shares its sessions between
// the turns of one machine (the workspace store) and, with the nats
// layer, between two nodes (the jetstream store): a turn stopped at its
// question on one node is resumed by the other, under its run id, and
// finishes with the answer given there.
func TestDocumentSharesSessions(t *testing.T) {
	for _, tc := range []struct {
		name        string
		distributed bool
	}{{"one machine", false}, {"two nodes", true}} {
		t.Run(tc.name, func(t *testing.T) {
			doc := loadDoc(t, tc.distributed)
			var a, b *node
			if tc.distributed {
				url := natstest.URLs(natstest.Cluster(t, 3))
				a, b = build(t, doc, url, "a"), build(t, doc, url, "b")
				store, _ := b.app.Resource("checkpoints")
				require.IsType(t, &nats.Store{}, store, "the layer replaced the store")
			} else {
				a = build(t, doc, "", "")
				b = a
				store, _ := a.app.Resource("checkpoints")
				require.IsType(t, &checkpoint.Store{}, store)
			}
			key := session.Key{AgentID: "concierge", ContextID: "shared"}
			first, err := a.start(t, key)
			require.NoError(t, err)
			a.asks(t, first)
			if b != a { // b saw the question too; the resumed run asks again
				select {
				case <-b.prompts(first.RunID()):
				case <-time.After(wait):
					t.Fatal("node b never saw the prompt of node a's turn")
				}
			}
			first.Cancel()
			_, _ = first.Wait(context.Background())

			lease, err := b.app.Sessions().Open(context.Background(), key)
			require.NoError(t, err)
			defer lease.Close()
			runID, ok, err := lease.Session().Resumable(context.Background())
			require.NoError(t, err)
			require.True(t, ok, "the stopped run is resumable where the session is opened")
			assert.Equal(t, first.RunID(), runID)
			resumed, err := lease.Session().Resume(context.Background())
			require.NoError(t, err)
			res := answer(t, b, resumed, "Ada")
			assert.Equal(t, agent.StatusCompleted, res.Status)
			require.NotEmpty(t, res.Output)
			assert.Contains(t, res.Output[len(res.Output)-1].Text(), "Nice to meet you, Ada.")
		})
	}
}

// REF 12.5.1, 12.3.1, 12.3.3, 12.3.6, 12.1.2: the same document with the
// nats layer runs as two nodes on a three-server cluster. A key's turn
// runs on one node: the other is refused, naming the owner; its events
// reach both nodes. When the owner stops renewing (its connection
// closes) its turn is stopped, and the other node takes the key over.
func TestDocumentOnTwoNodes(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	doc := loadDoc(t, true)
	a := build(t, doc, natstest.URLs(servers), "a")
	b := build(t, doc, natstest.URLs(servers), "b")
	busA, _ := a.app.Resource("events")
	require.IsType(t, &nats.Bus{}, busA)
	hears(t, b, a) // live delivery starts once b's interest reached a's server

	key := session.Key{AgentID: "concierge", ContextID: "c1"}
	onA, err := a.start(t, key)
	require.NoError(t, err)
	a.asks(t, onA)
	select { // the events are shared: b sees a's prompt too
	case <-b.prompts(onA.RunID()):
	case <-time.After(wait):
		t.Fatal("node b never saw the prompt of node a's turn")
	}

	_, err = b.start(t, key)
	var owned *session.OwnedError
	require.True(t, errors.As(err, &owned), "want an OwnedError, got %v", err)
	assert.Equal(t, "a", owned.Owner)
	assert.ErrorIs(t, err, fault.NotAvailable)

	other, err := b.start(t, session.Key{AgentID: "concierge", ContextID: "c2"})
	require.NoError(t, err, "another key is free on the other node")
	assert.Equal(t, agent.StatusCompleted, answer(t, b, other, "Bo").Status)

	busA.(*nats.Bus).Conn().Close() // node a stops renewing, as a dead node does
	takesOver(t, onA, b, key, "Cy", "a's turn is stopped once its lease is lost")
}

// REF 12.4.2, 12.3.3: a node cut off from the cluster (its only server
// reachable through a proxy that is cut) stops its turn within its lease
// TTL, and another node takes the key over.
func TestPartitionedNodeStopsItsTurn(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	proxy := natstest.NewProxy(t, servers[0].URL())
	doc := loadDoc(t, true)
	// node a knows the cluster through the proxy only
	onlyProxy := loadDocWith(t, "resources: {events: {settings: {no_discovery: true, publish_timeout: 1s}}}")
	a := build(t, onlyProxy, proxy.URL(), "a")
	b := build(t, doc, natstest.URLs(servers), "b")

	key := session.Key{AgentID: "concierge", ContextID: "p1"}
	onA, err := a.start(t, key)
	require.NoError(t, err)
	a.asks(t, onA)
	proxy.Cut()
	takesOver(t, onA, b, key, "Di", "the cut-off node stops its turn when its lease runs out")
}

// REF 12.1.6, 12.3.2: a node reloads its document while one of its turns
// runs. The turn finishes on the generation it started on, holding its
// key all along (the other node is still refused), the next turn runs on
// the new generation, and the runtime's attachments see each event once.
func TestReloadWhileATurnRuns(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	urls := natstest.URLs(servers)
	doc := loadDoc(t, true)
	a := build(t, doc, urls, "a")
	b := build(t, doc, urls, "b")
	var mu sync.Mutex
	seen := map[string]int{}
	detach, err := a.app.Attach(context.Background(), "agent.run.>", event.SinkFunc(func(_ context.Context, env event.Envelope) error {
		mu.Lock()
		seen[env.ID]++
		mu.Unlock()
		return nil
	}), event.WithAttachBufferSize(1024))
	require.NoError(t, err)
	defer detach()

	key := session.Key{AgentID: "concierge", ContextID: "r1"}
	first, err := a.start(t, key)
	require.NoError(t, err)
	asked := a.asks(t, first)

	bigger := loadDocWith(t, "resources: {events: {settings: {buffer_size: 512}}}")
	t.Setenv("CORRAL_NODE", "a")
	_, err = a.app.Reload(context.Background(), bigger)
	require.NoError(t, err)

	_, err = b.start(t, key)
	var owned *session.OwnedError
	require.True(t, errors.As(err, &owned), "the turn of the old generation still holds the key: %v", err)
	assert.Equal(t, agent.StatusCompleted, replyTo(t, first, asked, "Ed").Status)

	second, err := a.start(t, key)
	require.NoError(t, err)
	assert.Equal(t, agent.StatusCompleted, answer(t, a, second, "Flo").Status)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	for id, n := range seen {
		assert.Equal(t, 1, n, "event %s delivered %d times", id, n)
	}
}

// REF 12.4.3: tenant quotas are counted per node: with concurrent_turns
// 1, a second turn of the tenant is refused on the node that runs one,
// and runs on another node.
func TestQuotasArePerNode(t *testing.T) {
	url := natstest.URLs(natstest.Cluster(t, 3))
	doc := loadDocWith(t, "runtime: {tenants: {default: {concurrent_turns: 1}}}")
	a, b := build(t, doc, url, "a"), build(t, doc, url, "b")
	running, err := a.start(t, session.Key{AgentID: "concierge", ContextID: "q1"})
	require.NoError(t, err)
	asked := a.asks(t, running)

	_, err = a.start(t, session.Key{AgentID: "concierge", ContextID: "q2"})
	var quota *session.QuotaError
	require.True(t, errors.As(err, &quota), "want a QuotaError, got %v", err)
	assert.Equal(t, "concurrent_turns", quota.Quota)
	assert.ErrorIs(t, err, fault.BudgetExceeded)

	// another key: the refused turn had claimed q2 before the quota
	// refused it, and on a busy cluster the release of that claim may
	// fail, leaving the lease until it lapses
	onB, err := b.start(t, session.Key{AgentID: "concierge", ContextID: "q3"})
	require.NoError(t, err, "node b counts its own turns only")
	assert.Equal(t, agent.StatusCompleted, answer(t, b, onB, "Bo").Status)
	assert.Equal(t, agent.StatusCompleted, replyTo(t, running, asked, "Al").Status)
}
