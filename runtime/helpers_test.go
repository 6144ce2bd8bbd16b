package runtime_test

import (
	"context"
	"errors"
	"io"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/tool"
	"github.com/stretchr/testify/require"
)

// closeLog records the order in which test values are closed.
type closeLog struct {
	mu    sync.Mutex
	names []string
}

func (l *closeLog) add(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names = append(l.names, name)
}

func (l *closeLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.names...)
}

// thing is a closable test resource.
type thing struct {
	name string
	log  *closeLog
	deps map[string]any
}

var _ io.Closer = (*thing)(nil)

func (t *thing) Close() error {
	if t.log != nil {
		t.log.add(t.name)
	}
	return nil
}

// fakeTools is a tool.Assembly with no tools.
type fakeTools struct{ thing }

var _ tool.Assembly = (*fakeTools)(nil)

func (*fakeTools) Definitions() []tool.Definition { return nil }

func (*fakeTools) Execute(context.Context, tool.Batch) ([]message.ToolResult, error) { return nil, nil }

// memStore is a checkpoint store without the deleter extension.
type memStore struct {
	mu  sync.Mutex
	cps map[string]agent.Checkpoint
}

func (s *memStore) Save(_ context.Context, cp agent.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cps == nil {
		s.cps = map[string]agent.Checkpoint{}
	}
	s.cps[cp.ExecID] = cp.Clone()
	return nil
}

func (s *memStore) Load(_ context.Context, id string) (*agent.Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp, ok := s.cps[id]
	if !ok {
		return nil, nil
	}
	c := cp.Clone()
	return &c, nil
}

// delStore adds the deleter extension.
type delStore struct{ memStore }

func (s *delStore) Delete(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.cps, id)
	return nil
}

// testRegistry registers the memory bus and a set of fake factories:
//   - test.Thing/"" : a closable value; deps "dep" (Many) of type test.Thing and "db" of type db.Pool
//   - test.Store/plain and test.Store/deleting : checkpoint stores
//   - test.Store/typednil : a typed nil store
//   - agent.Engine/echo : an engine
//   - tool.Assembly/test : a stand-in tool assembly (fakeTools)
//   - tool.Assembly/bogus : a value of kind tool.Assembly that is not one
func testRegistry(t testing.TB, log *closeLog) *resource.Registry {
	t.Helper()
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory())
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "test.Thing", Deps: []resource.DepSpec{
		{Name: "dep", Type: "test.Thing", Many: true}, {Name: "db", Type: "db.Pool"},
	}}, func(_ context.Context, in resource.Input) (any, error) {
		return &thing{name: in.Name, log: log, deps: in.Deps}, nil
	}))
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "test.Failing"},
		func(_ context.Context, in resource.Input) (any, error) {
			return failingCloser{err: errors.New("close " + in.Name + " failed")}, nil
		}))
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "test.Store", Impl: "plain"},
		func(context.Context, resource.Input) (any, error) { return &memStore{}, nil }))
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "test.Store", Impl: "deleting"},
		func(context.Context, resource.Input) (any, error) { return &delStore{}, nil }))
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "test.Store", Impl: "typednil"},
		func(context.Context, resource.Input) (any, error) { return (*delStore)(nil), nil }))
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: tool.Kind, Impl: "test"},
		func(_ context.Context, in resource.Input) (any, error) {
			return &fakeTools{thing: thing{name: in.Name, log: log}}, nil
		}))
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: tool.Kind, Impl: "bogus"},
		func(_ context.Context, in resource.Input) (any, error) { return &thing{name: in.Name, log: log}, nil }))
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "agent.Engine", Impl: "echo"},
		func(context.Context, resource.Input) (any, error) {
			return agent.EngineFunc(func(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
				return b, nil
			}), nil
		}))
	return reg
}

// parse parses a YAML document named name.yaml.
func parse(t testing.TB, src string) *deploy.Document {
	t.Helper()
	doc, err := deploy.ParseWithConfig([]byte(src), deploy.ParseConfig{Filename: "deploy.yaml", BaseDir: t.TempDir()})
	require.NoError(t, err)
	return doc
}

// build builds src with a fresh registry and closes the runtime at the end
// of the test.
func build(t *testing.T, src string, opts ...func(*runtime.Builder)) (*runtime.Runtime, *closeLog) {
	t.Helper()
	log := &closeLog{}
	b := runtime.NewBuilder(testRegistry(t, log))
	for _, o := range opts {
		o(b)
	}
	rt, err := b.Build(context.Background(), parse(t, src))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() })
	return rt, log
}

func buildErr(t *testing.T, src string, opts ...func(*runtime.Builder)) (error, *closeLog) {
	t.Helper()
	log := &closeLog{}
	b := runtime.NewBuilder(testRegistry(t, log))
	for _, o := range opts {
		o(b)
	}
	rt, err := b.Build(context.Background(), parse(t, src))
	require.Error(t, err)
	require.Nil(t, rt)
	return err, log
}

const minimalDoc = `version: v1
resources:
  events: {kind: event.Bus, impl: memory}
runtime:
  event_bus: events
`

func goroutines() int { return goruntime.NumGoroutine() }

// noLeak waits until the goroutine count is back to before, and dumps the
// goroutines when it is not.
func noLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for goroutines() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left behind (before: %d):\n%s", goroutines()-before, before, buf[:goruntime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
