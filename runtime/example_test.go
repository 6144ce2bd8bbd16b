package runtime_test

import (
	"context"
	"fmt"

	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
)

// Build a runtime from a YAML document and attach a sink to its events.
func Example() {
	doc, err := deploy.ParseWithConfig([]byte(`
version: v1
resources:
  events:
    kind: event.Bus
    impl: memory
runtime:
  event_bus: events
  sessions:
    idle_timeout: 5m
`), deploy.ParseConfig{Filename: "deploy.yaml"})
	if err != nil {
		fmt.Println(err)
		return
	}

	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory())
	app, err := runtime.NewBuilder(reg).Build(context.Background(), doc)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()

	got := make(chan event.Envelope, 1)
	detach, err := app.Attach(context.Background(), "agent.run.*.prompt.requested",
		event.SinkFunc(func(_ context.Context, env event.Envelope) error {
			got <- env
			return nil
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer detach()

	bus, _ := app.Resource("events")
	_ = bus.(event.Bus).Publish(context.Background(), event.Envelope{
		Subject: "agent.run.r1.prompt.requested",
		Payload: []byte(`{"prompt_id":"p1"}`),
	})
	env := <-got
	fmt.Println("generation", app.GenerationID(), "idle timeout", app.Config().Sessions.IdleTimeout)
	fmt.Println(env.Subject, string(env.Payload))
	// Output:
	// generation 1 idle timeout 5m0s
	// agent.run.r1.prompt.requested {"prompt_id":"p1"}
}

// Reload a runtime with a new document: the first reload builds generation
// 2, the same document again is reported unchanged, and an invalid one is
// refused while generation 2 keeps serving.
func ExampleRuntime_Reload() {
	docs := map[string]*deploy.Document{}
	for _, timeout := range []string{"5m", "7m", "0s"} {
		doc, err := deploy.ParseWithConfig([]byte(`
version: v1
resources:
  events: {kind: event.Bus, impl: memory}
runtime:
  event_bus: events
  sessions: {idle_timeout: `+timeout+`}
`), deploy.ParseConfig{Filename: "deploy.yaml"})
		if err != nil {
			fmt.Println(err)
			return
		}
		docs[timeout] = doc
	}
	parse := func(timeout string) *deploy.Document { return docs[timeout] }
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory())
	ctx := context.Background()
	app, err := runtime.NewBuilder(reg).Build(ctx, parse("5m"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()

	res, err := app.Reload(ctx, parse("7m"))
	fmt.Println(res.GenerationID, res.PreviousID, app.Sessions().Tunables().IdleTimeout, err)
	res, err = app.Reload(ctx, parse("7m"))
	fmt.Println(res.GenerationID, res.Unchanged, err)
	_, err = app.Reload(ctx, parse("0s"))
	fmt.Println(err)
	fmt.Println("serving", app.GenerationID())
	// Output:
	// 2 1 7m0s <nil>
	// 2 true <nil>
	// reload generation 3: deploy.yaml:7: runtime.sessions.idle_timeout: idle_timeout "0s" must be a Go duration greater than 0
	// serving 2
}
