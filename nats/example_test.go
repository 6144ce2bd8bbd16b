package nats_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/session"
	natsserver "github.com/nats-io/nats-server/v2/server"
)

// startServer starts a NATS server with JetStream for an example; tests
// use natstest instead.
func startServer() (url string, stop func()) {
	dir, err := os.MkdirTemp("", "corral-nats-example")
	if err != nil {
		panic(err)
	}
	srv, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		panic(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		panic("nats server not ready")
	}
	return srv.ClientURL(), func() {
		srv.Shutdown()
		srv.WaitForShutdown()
		_ = os.RemoveAll(dir)
	}
}

// Two nodes share their events: what one publishes, the other reads from
// a cursor in the stream.
func ExampleConnect() {
	url, stop := startServer()
	defer stop()
	ctx := context.Background()
	a, err := nats.Connect(ctx, nats.Config{URL: url, Node: "a"})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := nats.Connect(ctx, nats.Config{URL: url, Node: "b"})
	if err != nil {
		panic(err)
	}
	defer b.Close()

	for _, s := range []string{"orders.created", "orders.paid"} {
		env, _ := event.NewEnvelope(ctx, s, nil)
		if err := a.Publish(ctx, env); err != nil {
			panic(err)
		}
	}
	sub, err := b.SubscribeFrom(ctx, "orders.>", 0, event.SubConfig{})
	if err != nil {
		panic(err)
	}
	defer sub.Close()
	for range 2 {
		env := <-sub.C()
		cursor, _ := nats.Cursor(env)
		fmt.Println(env.Subject, cursor)
	}
	// Output:
	// orders.created 1
	// orders.paid 2
}

// One node at a time holds a session key; the other is told who does.
func ExampleOwnership_Acquire() {
	url, stop := startServer()
	defer stop()
	ctx := context.Background()
	a, err := nats.Connect(ctx, nats.Config{URL: url, Node: "a", Advertise: "http://a:8080"})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := nats.Connect(ctx, nats.Config{URL: url, Node: "b"})
	if err != nil {
		panic(err)
	}
	defer b.Close()

	key := session.Key{AgentID: "assistant", ContextID: "c1"}
	claim, err := a.Ownership().Acquire(ctx, key)
	if err != nil {
		panic(err)
	}
	_, err = b.Ownership().Acquire(ctx, key)
	var owned *session.OwnedError
	fmt.Println(errors.As(err, &owned), owned.Owner, owned.Address)

	_ = claim.Release(ctx)
	_, err = b.Ownership().Acquire(ctx, key)
	fmt.Println(err)
	// Output:
	// true a http://a:8080
	// <nil>
}

// BusFactory builds the nats bus from a deployment document's settings;
// builtin.Registry registers it beside the memory bus.
func ExampleBusFactory() {
	spec := nats.BusFactory().Spec()
	fmt.Println(spec.Kind + "/" + spec.Impl)
	// Output:
	// event.Bus/nats
}
