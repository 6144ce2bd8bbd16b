package hostabi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// fixedClock is a host that also offers a clock.
type fixedClock struct{ agent.HostFuncs }

func (*fixedClock) Now() time.Time { return time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC) }

func Example() {
	host := &fixedClock{agent.HostFuncs{
		Inner: agent.NoopHost{},
		PublishFn: func(_ context.Context, env event.Envelope) error {
			fmt.Printf("published %s %s\n", env.Subject, env.Payload)
			return nil
		},
	}}
	journal := hostabi.NewJournal()
	d := hostabi.NewDispatcher(hostabi.Config{
		Host:    host,
		Run:     agent.Run{ID: "r1", AgentID: "bot"}, // no capabilities listed: the default grants
		Node:    "greet",
		Journal: journal,
	})
	ctx := context.Background()

	now, err := d.Call(ctx, "now", nil)
	fmt.Println(string(now), err)

	_, err = d.Call(ctx, "emit", json.RawMessage(`["token","Hello"]`))
	fmt.Println(err)

	_, err = d.Call(ctx, "publish", json.RawMessage(`["done",{}]`))
	fmt.Println(hostabi.ErrorInfoOf(err).Code)

	for _, e := range journal.Entries() {
		fmt.Println(e.Seq, e.Node, e.Func, string(e.Result))
	}
	// Output:
	// {"unix_ms":1700000000000,"iso":"2023-11-14T22:13:20.000Z"} <nil>
	// published agent.run.r1.stream.bot_node_greet.delta {"type":"part","part":{"type":"text","text":"Hello"}}
	// <nil>
	// policy_denied
	// 1 greet now {"unix_ms":1700000000000,"iso":"2023-11-14T22:13:20.000Z"}
}

func ExampleGranted() {
	run := agent.Run{Capabilities: []string{"publish", "delegate:qa"}}
	fmt.Println(hostabi.Granted(run, "publish"), hostabi.Granted(run, "emit"), hostabi.Granted(run, "delegate:qa"))
	fmt.Println(hostabi.Granted(agent.Run{}, "emit"))
	// Output:
	// true false true
	// true
}

func ExamplePublishSubject() {
	s, err := hostabi.PublishSubject("r1", "agent.run.other.end")
	fmt.Println(s, err)
	_, err = hostabi.PublishSubject("r1", "a.>")
	fmt.Println(hostabi.ErrorInfoOf(err).Code)
	// Output:
	// agent.run.r1.custom.agent.run.other.end <nil>
	// validation
}

func ExampleCatalog() {
	for _, f := range hostabi.Catalog() {
		fmt.Printf("%-15s %-10s %v\n", f.Name, f.Capability, f.NonDeterministic)
	}
	// Output:
	// askUser         ask_user   true
	// checkInterrupt  interrupt  true
	// delegate        delegate   true
	// drainSteer      steer      true
	// emit            emit       false
	// log             log        false
	// now             clock      true
	// publish         publish    false
	// random          random     true
	// reportUsage     usage      false
}
