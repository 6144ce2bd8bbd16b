package agent_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
)

// Greeter is an optional capability: an interface that some hosts offer.
type Greeter interface {
	Greet(name string) string
}

// greetingHost is a base host that offers Greeter.
type greetingHost struct{ agent.NoopHost }

func (greetingHost) Greet(name string) string { return "hello, " + name }

// gate replaces an authorising surface: it stops capability searches.
type gate struct{ agent.Host }

func (gate) UnwrapHost() agent.Host { return nil }

func ExampleCapabilityFromHost() {
	base := greetingHost{}
	// The runtime wraps the base host in decorators; HostFuncs replaces
	// Publish and passes everything else through.
	host := &agent.HostFuncs{
		Inner: base,
		PublishFn: func(ctx context.Context, env event.Envelope) error {
			fmt.Println("published", env.Subject)
			return nil
		},
	}
	_ = host.Publish(context.Background(), event.Envelope{Subject: "agent.run.r1.custom.step"})

	// A type assertion on the outer host misses the capability...
	_, direct := agent.Host(host).(Greeter)
	fmt.Println("type assertion finds it:", direct)

	// ...CapabilityFromHost follows UnwrapHost and finds it.
	if g, ok := agent.CapabilityFromHost[Greeter](host); ok {
		fmt.Println(g.Greet("corral"))
	}

	// A decorator that returns nil from UnwrapHost hides what is below it.
	_, ok := agent.CapabilityFromHost[Greeter](gate{Host: host})
	fmt.Println("found behind a gate:", ok)
	// Output:
	// published agent.run.r1.custom.step
	// type assertion finds it: false
	// hello, corral
	// found behind a gate: false
}

func ExampleEventBusFromHost() {
	_, ok := agent.EventBusFromHost(agent.NoopHost{})
	fmt.Println("NoopHost offers a bus:", ok)
	// Output:
	// NoopHost offers a bus: false
}

func ExampleInterrupted() {
	err := fmt.Errorf("run r1: %w", agent.Interrupted(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "ctrl-c"}))
	fmt.Println(err)
	fmt.Println(errors.Is(err, fault.Interrupted))
	var ie *agent.InterruptedError
	if errors.As(err, &ie) {
		fmt.Println(ie.Interrupt.Cause)
	}
	// Output:
	// run r1: interrupted: user_cancel: ctrl-c
	// true
	// user_cancel
}

func ExampleDefinition_Validate() {
	def := agent.Definition{
		Card:         agent.AgentCard{Name: "qa"},
		Engine:       agent.EngineRef{Impl: "graph"},
		Capabilities: []string{"steer", "delegate:researcher"},
	}
	fmt.Println(def.Validate())
	def.Engine.Kind = "agent.Engine"
	fmt.Println(def.Validate())
	// Output:
	// agent: engine.kind is required
	// <nil>
}
