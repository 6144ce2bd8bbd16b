package event_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/runtime/event"
)

// Subscribe to every step of one run, publish, and receive.
func ExampleMemoryBus() {
	ctx := context.Background()
	bus := event.NewMemoryBus()
	defer bus.Close()

	sub, err := bus.Subscribe(ctx, event.PatternRunSteps("r1"), event.SubConfig{})
	if err != nil {
		panic(err)
	}
	actor := event.Actor("bot", "n1")
	for _, subject := range []string{
		event.SubjectRunStart("r1"),            // not a step: not delivered
		event.SubjectStepStart("r1", actor),    // delivered
		event.SubjectStepComplete("r2", actor), // another run: not delivered
		event.SubjectStepComplete("r1", actor), // delivered
	} {
		env, err := event.NewEnvelope(ctx, subject, event.StepPayload{NodeID: "n1", Graph: "demo"})
		if err != nil {
			panic(err)
		}
		if err := bus.Publish(ctx, env); err != nil {
			panic(err)
		}
	}
	for range 2 {
		env := <-sub.C()
		var step event.StepPayload
		if err := env.Decode(&step); err != nil {
			panic(err)
		}
		fmt.Println(env.Subject, step.NodeID)
	}
	// Output:
	// agent.run.r1.step.bot_node_n1.start n1
	// agent.run.r1.step.bot_node_n1.complete n1
}

// Match a subject against patterns.
func ExampleMatch() {
	fmt.Println(event.Match("agent.run.r1.>", "agent.run.r1.start"))
	fmt.Println(event.Match("agent.run.>", "agent.run"))
	fmt.Println(event.Match("agent.*.r1.start", "agent.run.r1.start"))
	fmt.Println(event.SanitiseID("bot.node.n1"))
	// Output:
	// true
	// false
	// true
	// bot_node_n1
}

// Attach a sink across two buses, as the runtime does across a reload.
func ExampleRouter_Attach() {
	ctx := context.Background()
	oldBus, newBus := event.NewMemoryBus(), event.NewMemoryBus()
	defer oldBus.Close()
	defer newBus.Close()

	router := event.NewRouter()
	defer router.Close()
	if err := router.AddBus(oldBus); err != nil {
		panic(err)
	}
	got := make(chan string)
	detach, err := router.Attach(ctx, event.PatternRuntimeRebuild(), event.SinkFunc(
		func(_ context.Context, env event.Envelope) error {
			got <- env.Subject
			return nil
		}))
	if err != nil {
		panic(err)
	}
	defer detach()

	if err := router.AddBus(newBus); err != nil { // the attachment follows
		panic(err)
	}
	_ = oldBus.Publish(ctx, event.Envelope{Subject: event.SubjectRebuildStarted()})
	fmt.Println(<-got)
	_ = newBus.Publish(ctx, event.Envelope{Subject: event.SubjectRebuildCompleted()})
	fmt.Println(<-got)
	// Output:
	// runtime.rebuild.started
	// runtime.rebuild.completed
}
