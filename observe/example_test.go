package observe_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/observe"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// An observer attached to a runtime counts its turns; its handler serves
// them to Prometheus.
func Example() {
	ctx := context.Background()
	doc, err := deploy.Parse([]byte(`
version: v1
resources:
  events: {kind: event.Bus, impl: memory}
  js: {kind: sandbox.Runtime, impl: js}
agents:
  hello:
    card: {name: Hello}
    engine:
      kind: agent.Engine
      impl: graph
      deps: {script_runtime: js}
      settings:
        graph:
          name: hello
          entry: s
          nodes: [{id: s, type: script, config: {source: "board.setVar('greeting', 'hi')"}}]
          edges: [{from: s, to: __end__}]
runtime: {event_bus: events}
`))
	if err != nil {
		panic(err)
	}
	app, err := builtin.NewBuilder().Build(ctx, doc)
	if err != nil {
		panic(err)
	}
	defer app.Close()

	tp, shutdown, err := observe.SetupFromEnv(ctx) // a no-op unless OTEL_* asks for traces
	if err != nil {
		panic(err)
	}
	defer shutdown(ctx)
	obs, err := observe.New(ctx, app, observe.Options{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	defer obs.Close()

	lease, err := app.Sessions().Open(ctx, session.Key{AgentID: "hello", ContextID: "c1"})
	if err != nil {
		panic(err)
	}
	defer lease.Close()
	turn, err := lease.Session().Start(ctx, agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")})
	if err != nil {
		panic(err)
	}
	if _, err := turn.Wait(ctx); err != nil {
		panic(err)
	}

	// The observer follows events as the router delivers them: wait for
	// the turn's end to be counted.
	want := `corral_turns_ended_total{agent="hello",status="completed",tenant="default"} 1`
	for range 1000 {
		rec := httptest.NewRecorder()
		obs.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if strings.Contains(rec.Body.String(), want) {
			fmt.Println(want)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("not counted")
	// Output:
	// corral_turns_ended_total{agent="hello",status="completed",tenant="default"} 1
}
