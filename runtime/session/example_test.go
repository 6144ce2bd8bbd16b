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

// A manager configured by a session.Config (zero fields keep their
// defaults) runs a turn configured by a session.StartConfig: here an
// ephemeral session whose AskUser is answered on the spot.
func ExampleSession_StartWithConfig() {
	bus := event.NewMemoryBus()
	defer bus.Close()
	engine := agenttest.New(agenttest.AskUser("name?"))
	agents := exampleAgents{"assistant": {ID: "assistant", Engine: engine}}
	hosts := func(_ context.Context, req session.HostRequest) (agent.Host, error) {
		return &agent.HostFuncs{Inner: agent.NoopHost{}, PublishFn: bus.Publish, AskUserFn: req.AskUser}, nil
	}
	m, err := session.NewManagerWithConfig(session.Deps{Resolver: agents, HostFactory: hosts, Bus: bus},
		session.Config{Tunables: session.Tunables{MaxSessions: 10}})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	fmt.Println("max sessions:", m.Tunables().MaxSessions, "sink buffer:", m.Tunables().SinkBuffer)

	ctx := context.Background()
	lease, err := m.Open(ctx, session.Key{AgentID: "assistant", ContextID: "c1"})
	if err != nil {
		panic(err)
	}
	defer lease.Close()
	turn, err := lease.Session().StartWithConfig(ctx, agent.Request{}, session.StartConfig{
		Ephemeral: true,
		AskUser: func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
			return agent.UserReply{Parts: []message.Part{message.TextPart("Ada")}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	res, err := turn.Wait(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("reply:", res.LastBoard.Vars[agenttest.VarReply], "ephemeral:", lease.Session().Ephemeral())
	// Output:
	// max sessions: 10 sink buffer: 256
	// reply: Ada ephemeral: true
}
