package nats_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/nats/natstest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/event/eventtest"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 12.1.1: the nats bus keeps the bus contract for this node's
// subscriptions; it passes the conformance suite every bus passes.
func TestBusConformance(t *testing.T) {
	srv := server(t)
	var next atomic.Int64
	eventtest.RunBusSuite(t, func(t *testing.T) event.Bus {
		n := next.Add(1)
		// each case gets a deployment of its own prefix, so that the
		// cases, which run in parallel, do not see each other's events
		return connect(t, srv.URL(), fmt.Sprintf("node%d", n), func(c *nats.Config) {
			c.SubjectPrefix = fmt.Sprintf("conf%d", n)
			c.Stream = fmt.Sprintf("CONF%d", n)
			c.LeaseBucket = fmt.Sprintf("CONF%d_SESSIONS", n)
		})
	})
}

// REF 12.1.2: what one node publishes reaches the matching subscriptions
// of the others, durable and ephemeral events alike, in publish order.
func TestBusAcrossNodes(t *testing.T) {
	srv := server(t)
	a, b := connect(t, srv.URL(), "a"), connect(t, srv.URL(), "b")
	onB := eventtest.SubscribeWithConfig(t, b, "agent.run.r1.>", event.SubConfig{BufferSize: 100})
	onA := eventtest.SubscribeWithConfig(t, a, "agent.run.r1.>", event.SubConfig{BufferSize: 100})
	other := eventtest.Subscribe(t, b, "agent.run.r2.>")
	subjects := []string{
		event.SubjectRunStart("r1"),
		event.SubjectStreamDelta("r1", "bot_node_n1"),
		event.SubjectStepComplete("r1", "bot_node_n1"),
		event.SubjectStreamDelta("r1", "bot_node_n1"),
		event.SubjectRunEnd("r1"),
	}
	require.True(t, a.Ephemeral(subjects[1]))
	require.False(t, a.Ephemeral(subjects[0]))
	for i, s := range subjects {
		env, err := event.NewEnvelope(t.Context(), s, i)
		require.NoError(t, err)
		require.NoError(t, a.Publish(t.Context(), env.WithHeader(event.HeaderRunID, "r1")))
	}
	for _, sub := range []event.Subscription{onA, onB} {
		for i, s := range subjects {
			got := eventtest.Receive(t, sub)
			assert.Equal(t, s, got.Subject)
			assert.Equal(t, "r1", got.Header(event.HeaderRunID))
			var n int
			require.NoError(t, got.Decode(&n))
			assert.Equal(t, i, n)
		}
	}
	// the node's own events reach it once: locally, not again over NATS.
	// An echo would reach b before a's later event, on the same connection.
	eventtest.Publish(t, b, event.SubjectRunStart("r2"), nil)
	require.NoError(t, b.Conn().Flush())
	eventtest.Publish(t, a, event.SubjectRunEnd("r2"), nil)
	assert.Equal(t, event.SubjectRunStart("r2"), eventtest.Receive(t, other).Subject)
	assert.Equal(t, event.SubjectRunEnd("r2"), eventtest.Receive(t, other).Subject)
	eventtest.AssertEmpty(t, onA)
	eventtest.AssertEmpty(t, onB)
}

// REF 12.1.6: two buses with the same node name — the old and the new
// generation of one runtime during a reload — do not deliver each other's
// events to their live subscriptions (each delivers its own, as two memory
// buses would), while a cursor subscription reads both from the stream.
func TestBusesOfOneNodeKeepTheirOwn(t *testing.T) {
	srv := server(t)
	old, cur := connect(t, srv.URL(), "a"), connect(t, srv.URL(), "a")
	other := connect(t, srv.URL(), "b")
	onOld := eventtest.SubscribeWithConfig(t, old, "gen.>", event.SubConfig{BufferSize: 10})
	onOther := eventtest.SubscribeWithConfig(t, other, "gen.>", event.SubConfig{BufferSize: 10})
	eventtest.Publish(t, cur, "gen.new", nil)
	eventtest.Publish(t, other, "gen.other", nil)
	seen := []string{eventtest.Receive(t, onOther).Subject, eventtest.Receive(t, onOther).Subject}
	assert.ElementsMatch(t, []string{"gen.new", "gen.other"}, seen, "another node sees it beside its own")
	assert.Equal(t, "gen.other", eventtest.Receive(t, onOld).Subject, "the old bus sees only other nodes' events")
	eventtest.AssertEmpty(t, onOld)
	sub, err := old.SubscribeFrom(t.Context(), "gen.>", 0, event.SubConfig{})
	require.NoError(t, err)
	assert.Equal(t, "gen.new", eventtest.Receive(t, sub).Subject)
	assert.Equal(t, "gen.other", eventtest.Receive(t, sub).Subject)
}

// REF 12.1.2.1: a durable event sent twice with one id (a publish that
// asked again for its acknowledgement) reaches another node's live
// subscriptions once, as the stream stores it once.
func TestRetriedPublishDeliveredOnce(t *testing.T) {
	srv := server(t)
	b := connect(t, srv.URL(), "b")
	sub := eventtest.SubscribeWithConfig(t, b, "x.>", event.SubConfig{BufferSize: 10})
	nc := connect(t, srv.URL(), "raw").Conn()
	one := []byte(`{"id":"00000000000000000001","subject":"x.y","payload":1}`)
	two := []byte(`{"id":"00000000000000000002","subject":"x.y","payload":2}`)
	for _, data := range [][]byte{one, one, two, one} {
		require.NoError(t, nc.Publish("corral.ev.x.y", data))
	}
	require.NoError(t, nc.Flush())
	assert.Equal(t, "00000000000000000001", eventtest.Receive(t, sub).ID)
	assert.Equal(t, "00000000000000000002", eventtest.Receive(t, sub).ID)
	// the next event on the connection comes next: the fourth copy of
	// the first was not delivered
	require.NoError(t, nc.Publish("corral.eph.x.y", []byte(`{"id":"00000000000000000003","subject":"x.y"}`)))
	assert.Equal(t, "00000000000000000003", eventtest.Receive(t, sub).ID)
}

// REF 12.1.5: a full Block subscription on one node never makes another
// node's publisher wait; it holds up its own node's delivery, which loses
// nothing and keeps the order, while NATS holds what arrives meanwhile.
func TestBlockDoesNotReachAcrossNodes(t *testing.T) {
	srv := server(t)
	a, b := connect(t, srv.URL(), "a"), connect(t, srv.URL(), "b")
	slow := eventtest.SubscribeWithConfig(t, b, "blk.>", event.SubConfig{BufferSize: 1, Backpressure: event.Block})
	after := eventtest.SubscribeWithConfig(t, b, "later.>", event.SubConfig{BufferSize: 10})
	const n = 20
	for i := range n {
		eventtest.Publish(t, a, "blk.e", i) // returns although b's subscriber is full
	}
	eventtest.Publish(t, a, "later.e", nil)
	for i := range n {
		var got int
		require.NoError(t, eventtest.Receive(t, slow).Decode(&got))
		assert.Equal(t, i, got)
	}
	assert.Equal(t, "later.e", eventtest.Receive(t, after).Subject, "delivered once the Block subscriber made room")
	assert.Zero(t, b.RemoteDropped())
	assert.Zero(t, b.Dropped())
}

// REF 12.1.3: messages on the bus's subjects that are not envelopes, or
// whose envelope names another subject, are dropped and counted, never
// delivered.
func TestBusDropsForeignMessages(t *testing.T) {
	srv := server(t)
	b := connect(t, srv.URL(), "b")
	sub := eventtest.Subscribe(t, b, "x.>")
	nc := connect(t, srv.URL(), "raw").Conn()
	require.NoError(t, nc.Publish("corral.eph.x.y", []byte("not json")))
	require.NoError(t, nc.Publish("corral.eph.x.y", []byte(`{"subject":"x.z","id":"i"}`)))
	require.NoError(t, nc.Publish("corral.other.x.y", []byte(`{"subject":"x.y","id":"i"}`)))
	require.NoError(t, nc.Flush())
	eventually(t, "foreign messages counted", func() bool { return b.Invalid() == 3 })
	eventtest.AssertEmpty(t, sub)
}

// REF 12.1.4: a bad configuration is a Validation error; an unreachable
// server is NotAvailable.
func TestConnectErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  nats.Config
		kind *fault.Kind
	}{
		{"no url", nats.Config{}, fault.Validation},
		{"bad prefix", nats.Config{URL: "nats://127.0.0.1:1", SubjectPrefix: "a.*"}, fault.Validation},
		{"bad replicas", nats.Config{URL: "nats://127.0.0.1:1", Replicas: 7}, fault.Validation},
		{"short lease", nats.Config{URL: "nats://127.0.0.1:1", LeaseTTL: 10e6}, fault.Validation},
		{"bad ephemeral", nats.Config{URL: "nats://127.0.0.1:1", Ephemeral: []string{"a.>.b"}}, fault.Validation},
		{"dotted node", nats.Config{URL: "nats://127.0.0.1:1", Node: "a.b"}, fault.Validation},
		{"control character in node", nats.Config{URL: "nats://127.0.0.1:1", Node: "a\x01b"}, fault.Validation},
		{"bucket name nats refuses", nats.Config{URL: "nats://127.0.0.1:1", LeaseBucket: "a:b"}, fault.Validation},
		{"bucket name not ascii", nats.Config{URL: "nats://127.0.0.1:1", LeaseBucket: "sessions-é"}, fault.Validation},
		{"long stream name", nats.Config{URL: "nats://127.0.0.1:1", Stream: strings.Repeat("s", 256)}, fault.Validation},
		{"system prefix", nats.Config{URL: "nats://127.0.0.1:1", SubjectPrefix: "$KV.CORRAL_SESSIONS"}, fault.Validation},
		{"inbox prefix", nats.Config{URL: "nats://127.0.0.1:1", SubjectPrefix: "_INBOX"}, fault.Validation},
		{"unreachable", nats.Config{URL: "nats://127.0.0.1:1", ConnectTimeout: 200e6}, fault.NotAvailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := nats.Connect(context.Background(), tc.cfg)
			assert.ErrorIs(t, err, tc.kind)
		})
	}
}

// REF 12.1.8: deployments share one NATS by their subject prefixes only
// when each has its own stream and lease bucket: a node whose prefix
// differs from the one a stream or bucket serves is refused (Validation,
// naming the setting), instead of taking the stream over — the first
// deployment's durable events would go nowhere — or sharing its leases
// and session records.
func TestDeploymentsSharingNATS(t *testing.T) {
	srv := server(t)
	one := connect(t, srv.URL(), "a", func(c *nats.Config) { c.SubjectPrefix = "one" })
	for _, tc := range []struct {
		name, setting string
		cfg           nats.Config
	}{
		{"the stream", "stream", nats.Config{SubjectPrefix: "two", LeaseBucket: "TWO_SESSIONS"}},
		{"the lease bucket", "lease_bucket", nats.Config{SubjectPrefix: "two", Stream: "TWO_EVENTS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.URL, cfg.Node = srv.URL(), "b"
			b, err := nats.Connect(t.Context(), cfg)
			if err == nil {
				_ = b.Close()
			}
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tc.setting)
			assert.Contains(t, err.Error(), `"one"`, "names the deployment that uses it")
		})
	}
	connect(t, srv.URL(), "b", func(c *nats.Config) {
		c.SubjectPrefix, c.Stream, c.LeaseBucket = "two", "TWO_EVENTS", "TWO_SESSIONS"
	})
	connect(t, srv.URL(), "c", func(c *nats.Config) { c.SubjectPrefix = "one" }) // the same deployment's next node

	sub, err := one.SubscribeFrom(t.Context(), "x.>", 0, event.SubConfig{})
	require.NoError(t, err)
	defer sub.Close()
	eventtest.Publish(t, one, "x.y", 1)
	assert.Equal(t, "x.y", eventtest.Receive(t, sub).Subject, "the first deployment still stores its events")
}

// REF 12.1.7: a durable publish whose acknowledgement does not come —
// here the only server is down for longer than publish_timeout — is asked
// for again for as long as the publisher's ctx lasts, and the stream
// stores the event once when the server is back.
func TestPublishOutlastsAnOutage(t *testing.T) {
	srv := server(t)
	a := connect(t, srv.URL(), "a", func(c *nats.Config) { c.PublishTimeout = time.Second })
	local := eventtest.Subscribe(t, a, "out.>")
	srv.Shutdown()
	env, err := event.NewEnvelope(t.Context(), "out.e", 1)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.Publish(t.Context(), env) }()
	assert.Equal(t, env.ID, eventtest.Receive(t, local).ID, "delivered locally at once")
	// the publish waits longer than publish_timeout with no server to
	// answer it (a lower bound: a busy machine only makes it longer)
	time.Sleep(3 * time.Second)
	select {
	case err := <-done:
		require.Failf(t, "the publish gave up while its ctx lived", "%v", err)
	default:
	}
	srv.Restart()
	require.NoError(t, <-done)

	eventtest.Publish(t, a, "out.f", 2)
	sub, err := a.SubscribeFrom(t.Context(), "out.>", 0, event.SubConfig{})
	require.NoError(t, err)
	assert.Equal(t, env.ID, eventtest.Receive(t, sub).ID)
	assert.Equal(t, "out.f", eventtest.Receive(t, sub).Subject, "the event was stored once")
}

// REF 12.1.7: a durable publish that ultimately fails says so: NotAvailable
// when its ctx ends (or, for a ctx that cannot end, after publish_timeout),
// event.ErrBusClosed when the bus closes while it waits; the local
// subscriptions have the event either way.
func TestPublishFailureSurfaces(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
		stop func(b *nats.Bus) // ends the wait, or nil
		want error
	}{
		{"ctx ends", func(t *testing.T) context.Context {
			ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
			t.Cleanup(cancel)
			return ctx
		}, nil, fault.NotAvailable},
		{"ctx cannot end", func(t *testing.T) context.Context { return context.WithoutCancel(t.Context()) }, nil, fault.NotAvailable},
		{"bus closes", func(t *testing.T) context.Context { return t.Context() }, func(b *nats.Bus) { _ = b.Close() }, event.ErrBusClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := server(t)
			a := connect(t, srv.URL(), "a", func(c *nats.Config) { c.PublishTimeout = time.Second })
			local := eventtest.Subscribe(t, a, "out.>")
			srv.Shutdown()
			done := make(chan error, 1)
			go func() {
				env, _ := event.NewEnvelope(t.Context(), "out.e", 1)
				done <- a.Publish(tc.ctx(t), env)
			}()
			eventtest.Receive(t, local)
			if tc.stop != nil {
				tc.stop(a)
			}
			err := <-done
			require.ErrorIs(t, err, tc.want)
			if tc.want == event.ErrBusClosed {
				assert.Equal(t, event.ErrBusClosed, err, "exactly ErrBusClosed")
			}
		})
	}
}

// REF 12.1.4.1: Connect asks again while the cluster cannot answer (no
// JetStream quorum: two of three servers down, for longer than a
// JetStream request waits), and succeeds once it can, within its ctx.
func TestConnectWaitsForTheCluster(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	servers[1].Shutdown()
	servers[2].Shutdown()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
		defer cancel()
		b, err := nats.Connect(ctx, nats.Config{URL: servers[0].URL(), Node: "a", Replicas: 3, LeaseTTL: leaseTTL})
		if err == nil {
			t.Cleanup(func() { _ = b.Close() })
		}
		done <- err
	}()
	// longer than one JetStream request waits (5 s): a lower bound
	time.Sleep(6 * time.Second)
	var wg sync.WaitGroup
	wg.Go(servers[1].Restart)
	wg.Go(servers[2].Restart)
	wg.Wait()
	require.NoError(t, <-done)
}

// REF 12.1.7: a durable publish the stream refuses outright (here a
// stream that takes no more messages) fails at once with the stream's
// answer; only a publish nobody answered is asked again.
func TestPublishRefusedIsNotAskedAgain(t *testing.T) {
	srv := server(t)
	a := connect(t, srv.URL(), "a")
	js, err := jetstream.New(a.Conn())
	require.NoError(t, err)
	st, err := js.Stream(t.Context(), nats.DefaultStream)
	require.NoError(t, err)
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs, cfg.Discard = 1, jetstream.DiscardNew
	_, err = js.UpdateStream(t.Context(), cfg)
	require.NoError(t, err)

	publish := func() error {
		env, _ := event.NewEnvelope(t.Context(), "out.e", 1)
		done := make(chan error, 1)
		go func() { done <- a.Publish(t.Context(), env) }() // a ctx that lasts the test
		select {
		case err := <-done:
			return err
		case <-time.After(wait):
			t.Fatal("a publish the stream refused is still being asked again")
			return nil
		}
	}
	require.NoError(t, publish())
	err = publish()
	require.ErrorIs(t, err, fault.NotAvailable)
	var apiErr *jetstream.APIError
	require.ErrorAs(t, err, &apiErr, "the stream's own answer is kept")
}
