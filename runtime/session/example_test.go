package session_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// exampleAgents resolves agent ids from a map.
type exampleAgents map[string]*agent.Agent

func (m exampleAgents) Agent(id string) (*agent.Agent, bool) { a, ok := m[id]; return a, ok }

// Open a lease on a session, start a turn with a sink, and wait for it.
func ExampleSession_Start() {
	bus := event.NewMemoryBus()
	defer bus.Close()

	// An agent whose engine streams two words; a real deployment builds
	// its agents, bus and host factory from a document.
	engine := agenttest.New(agenttest.Say("Hello"), agenttest.Say("world"))
	agents := exampleAgents{"assistant": {ID: "assistant", Engine: engine}}
	hosts := func(_ context.Context, req session.HostRequest) (agent.Host, error) {
		return &agent.HostFuncs{
			Inner:        agent.NoopHost{},
			PublishFn:    bus.Publish,
			InterruptsFn: func() <-chan agent.Interrupt { return req.Interrupts },
			AskUserFn:    req.AskUser,
		}, nil
	}
	m, err := session.NewManager(session.Deps{Resolver: agents, HostFactory: hosts, Bus: bus})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	ctx := context.Background()
	lease, err := m.Open(ctx, session.Key{AgentID: "assistant", ContextID: "c1"})
	if err != nil {
		panic(err)
	}
	defer lease.Close()

	var mu sync.Mutex
	var words []string
	console := agent.StreamSinkFunc(func(_ context.Context, _ event.Envelope, d event.StreamDeltaPayload) error {
		if d.Part != nil && d.Part.Type == message.PartText {
			mu.Lock()
			words = append(words, d.Part.Text)
			mu.Unlock()
		}
		return nil
	})
	turn, err := lease.Session().Start(ctx,
		agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")},
		session.SinkSpec{ID: "console", Sink: console})
	if err != nil {
		panic(err)
	}
	res, err := turn.Wait(ctx) // returns once every sink has drained
	if err != nil {
		panic(err)
	}
	fmt.Println("streamed:", strings.Join(words, " "))
	fmt.Println("status:", res.Status, "committed:", res.Committed)
	fmt.Println("messages:", len(res.Output))
	// Output:
	// streamed: Hello world
	// status: completed committed: true
	// messages: 2
}
