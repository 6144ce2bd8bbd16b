package hostabi_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/require"
)

// The optional capabilities a test host can offer, by capability name.
func optionalCaps() []string {
	return []string{agent.CapSteer, agent.CapClock, agent.CapRandom, agent.CapLog, agent.CapDelegate, agent.CapPublish}
}

// logLine is one host.log call a recorder saw.
type logLine struct {
	Level, Msg string
	Attrs      map[string]any
}

// recorder backs a test host: it answers from its fields and records what
// it is asked. It is safe for concurrent use.
type recorder struct {
	mu         sync.Mutex
	envs       []event.Envelope
	logs       []logLine
	usage      []agent.Usage
	prompts    []agent.UserPrompt
	steer      []message.Message
	now        time.Time
	rnd        float64
	interrupts chan agent.Interrupt
	publishErr error
	usageErr   error
	askErr     error
	reply      agent.UserReply
	delegated  []delegation.Request
	delegateFn func(ctx context.Context, req delegation.Request) (delegation.Response, error)
}

func newRecorder() *recorder {
	return &recorder{
		now:        time.Date(2023, 11, 14, 22, 13, 20, 123_000_000, time.UTC),
		rnd:        0.25,
		interrupts: make(chan agent.Interrupt, 1),
		reply:      agent.UserReply{Parts: []message.Part{message.TextPart("yes")}},
	}
}

func (r *recorder) envelopes() []event.Envelope {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.envs)
}

func (r *recorder) logLines() []logLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.logs)
}

// host returns a host over r offering the optional capabilities named in
// caps (a subset of optionalCaps), each on its own decorator layer over
// agent.HostFuncs and agent.NoopHost, so they are found by unwrapping.
func (r *recorder) host(caps ...string) agent.Host {
	var h agent.Host = &agent.HostFuncs{
		Inner: agent.NoopHost{},
		PublishFn: func(_ context.Context, env event.Envelope) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.publishErr != nil {
				return r.publishErr
			}
			r.envs = append(r.envs, env.Clone())
			return nil
		},
		InterruptsFn: func() <-chan agent.Interrupt { return r.interrupts },
		AskUserFn: func(_ context.Context, p agent.UserPrompt) (agent.UserReply, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.prompts = append(r.prompts, p)
			return r.reply, r.askErr
		},
		ReportUsageFn: func(_ context.Context, u agent.Usage) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.usage = append(r.usage, u)
			return r.usageErr
		},
	}
	for _, c := range caps {
		inner := agent.HostFuncs{Inner: h}
		switch c {
		case agent.CapSteer:
			h = &steerHost{HostFuncs: inner, r: r}
		case agent.CapClock:
			h = &clockHost{HostFuncs: inner, r: r}
		case agent.CapRandom:
			h = &randomHost{HostFuncs: inner, r: r}
		case agent.CapLog:
			h = &logHost{HostFuncs: inner, r: r}
		case agent.CapDelegate:
			h = delegation.WithService(&inner, &fakeService{r: r})
		case agent.CapPublish:
			h = &busHost{HostFuncs: inner, bus: event.NewMemoryBus()}
		default:
			panic("unknown optional capability " + c)
		}
	}
	return h
}

// fullHost offers every capability.
func (r *recorder) fullHost() agent.Host { return r.host(optionalCaps()...) }

// busHost yields an event bus, which host.publish requires; what is
// published still goes through the recorder's Publish.
type busHost struct {
	agent.HostFuncs
	bus event.Bus
}

func (h *busHost) EventBus() event.Bus { return h.bus }

type steerHost struct {
	agent.HostFuncs
	r *recorder
}

func (h *steerHost) DrainSteer() []message.Message {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	out := h.r.steer
	h.r.steer = nil
	return out
}

type clockHost struct {
	agent.HostFuncs
	r *recorder
}

func (h *clockHost) Now() time.Time {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	return h.r.now
}

type randomHost struct {
	agent.HostFuncs
	r *recorder
}

func (h *randomHost) Random() float64 {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	return h.r.rnd
}

type logHost struct {
	agent.HostFuncs
	r *recorder
}

func (h *logHost) Log(_ context.Context, level, msg string, attrs map[string]any) {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.logs = append(h.r.logs, logLine{level, msg, attrs})
}

// fakeService records delegations and answers with delegateFn, or with
// a succeeded response whose output echoes the input's text.
type fakeService struct{ r *recorder }

func (s *fakeService) Delegate(ctx context.Context, req delegation.Request) (delegation.Response, error) {
	s.r.mu.Lock()
	s.r.delegated = append(s.r.delegated, req.Clone())
	fn := s.r.delegateFn
	s.r.mu.Unlock()
	if fn != nil {
		return fn(ctx, req)
	}
	return delegation.Response{ID: "dlg-1", Target: req.Target, RunID: "run-child", Status: delegation.StatusSucceeded,
		Output: []message.Message{message.NewTextMessage(message.RoleAssistant, "re: "+req.Input.Text())}}, nil
}

func (s *fakeService) Get(context.Context, string) (delegation.Response, error) {
	return delegation.Response{}, fault.New(fault.NotFound, "get", "none")
}

// opaqueHost hides everything beneath it from capability searches: its
// UnwrapHost returns nil (REF 6.1.3).
type opaqueHost struct{ agent.HostFuncs }

func (*opaqueHost) UnwrapHost() agent.Host { return nil }

var (
	_ agent.SteerSource  = (*steerHost)(nil)
	_ agent.Clock        = (*clockHost)(nil)
	_ agent.RandomSource = (*randomHost)(nil)
	_ agent.LogSink      = (*logHost)(nil)
)

// allCaps grants every capability of the catalog.
func allCaps() []string {
	var out []string
	for _, f := range hostabi.Catalog() {
		out = append(out, f.Capability)
	}
	return out
}

// testRun is a run whose document grants caps (nil: the defaults).
func testRun(caps []string) agent.Run {
	return agent.Run{ID: "r1", AgentID: "bot", Capabilities: caps}
}

// newDispatcher returns a dispatcher for node "n1" of run r1 over h.
func newDispatcher(h agent.Host, caps []string, j *hostabi.Journal, l sandbox.Limits) *hostabi.Dispatcher {
	return hostabi.NewDispatcher(hostabi.Config{Host: h, Run: testRun(caps), Node: "n1", Limits: l, Journal: j})
}

// call is Dispatcher.Call with a background context and string args.
func call(t testing.TB, d *hostabi.Dispatcher, name, args string) (json.RawMessage, error) {
	t.Helper()
	return d.Call(context.Background(), name, json.RawMessage(args))
}

// requireKind fails unless err carries kind.
func requireKind(t testing.TB, err error, kind *fault.Kind) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, kind, "error %q", err)
}

// goodArgs holds, per function, arguments that the function accepts.
func goodArgs() map[string]string {
	return map[string]string{
		hostabi.FuncAskUser:        `[{"parts":[{"type":"text","text":"continue?"}]}]`,
		hostabi.FuncCheckInterrupt: `[]`,
		hostabi.FuncDelegate:       `["helper","hi"]`,
		hostabi.FuncDrainSteer:     `[]`,
		hostabi.FuncEmit:           `["token","hi"]`,
		hostabi.FuncLog:            `["info","hello"]`,
		hostabi.FuncNow:            `[]`,
		hostabi.FuncPublish:        `["progress",{"pct":50}]`,
		hostabi.FuncRandom:         `[]`,
		hostabi.FuncReportUsage:    `[{"input":1,"output":2,"total":3}]`,
	}
}

// noopPublishHost is r's full host with a publish that keeps nothing, for
// benchmarks.
func noopPublishHost(r *recorder) agent.Host {
	h := r.fullHost()
	return &agent.HostFuncs{Inner: h, PublishFn: func(context.Context, event.Envelope) error { return nil }}
}
