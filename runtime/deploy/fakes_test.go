package deploy_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
)

// journal records what the fake values go through, in order.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.events)
}

// thing is the value most fake factories build. It records Close.
type thing struct {
	name     string
	kind     string
	settings json.RawMessage
	deps     map[string]any
	j        *journal
	closeErr error
	closed   int
}

var _ io.Closer = (*thing)(nil)

func (t *thing) Close() error {
	t.closed++
	t.j.add("close " + t.name)
	return t.closeErr
}

type wirer struct {
	*thing
	fail bool
}

var _ resource.Wireable = (*wirer)(nil)

func (w *wirer) Wire(context.Context) error {
	w.j.add("wire " + w.name)
	if w.fail {
		return fault.New(fault.NotAvailable, "", "the fake refuses to wire")
	}
	return nil
}

type binder struct {
	*thing
	got any
}

var _ resource.DeploymentBinder = (*binder)(nil)

func (b *binder) BindDeployment(result any) error {
	b.j.add("bind " + b.name)
	b.got = result
	return nil
}

type catalog struct {
	*thing
	items []string
}

var _ resource.ItemResolver = (*catalog)(nil)

func (c *catalog) ResolveItem(item string) (any, error) {
	if slices.Contains(c.items, item) {
		return c.name + "/" + item, nil
	}
	return nil, fault.New(fault.NotFound, "", "no such item")
}

type engine struct{ *thing }

var _ agent.Engine = (*engine)(nil)

func (e *engine) Execute(_ context.Context, _ agent.Run, _ agent.Host, b *agent.Board) (*agent.Board, error) {
	return b, nil
}

type preparer struct{ *thing }

func (preparer) Prepare(context.Context, agent.Run, agent.Request, *agent.Board) error { return nil }

type observer struct{ *thing }

func (observer) Observe(context.Context, agent.Run, *agent.Board) {}

type referee struct{ *thing }

func (referee) Judge(context.Context, agent.Run, *agent.Result) (agent.Verdict, error) {
	return agent.Verdict{Accept: true}, nil
}

type committer struct{ *thing }

func (committer) Commit(context.Context, agent.Run, *agent.Result) error { return nil }

var (
	_ agent.Preparer  = preparer{}
	_ agent.Observer  = observer{}
	_ agent.Referee   = referee{}
	_ agent.Committer = committer{}
)

// fakeSettings are the settings every fake accepts, decoded strictly.
type fakeSettings struct {
	Note   string          `json:"note,omitempty"`
	Items  []string        `json:"items,omitempty"`
	Expand bool            `json:"expand,omitempty"`
	Path   string          `json:"path,omitempty"`
	Graph  json.RawMessage `json:"graph,omitempty"`
	Fail   string          `json:"fail,omitempty"`
}

func newThing(j *journal, kind string, in resource.Input) (*thing, error) {
	s, err := resource.DecodeTyped[fakeSettings](in.Settings)
	if err != nil {
		return nil, err
	}
	if s.Expand {
		if _, err := in.ExpandSettings(); err != nil {
			return nil, err
		}
	}
	if s.Fail != "" {
		return nil, errors.New(s.Fail)
	}
	j.add("new " + in.Name + " " + kind)
	return &thing{name: in.Name, kind: kind, settings: in.Settings, deps: in.Deps, j: j}, nil
}

// fakeFactory builds a factory whose value wrap makes from a thing.
func fakeFactory(j *journal, spec resource.Spec, wrap func(*thing, fakeSettings) any) resource.Factory {
	return resource.FactoryFunc(spec, func(_ context.Context, in resource.Input) (any, error) {
		t, err := newThing(j, spec.Key(), in)
		if err != nil {
			return nil, err
		}
		s, _ := resource.DecodeTyped[fakeSettings](in.Settings)
		return wrap(t, s), nil
	})
}

func plain(t *thing, _ fakeSettings) any { return t }

// testRegistry returns a registry of fake factories:
//
//	test.Bus/memory        a closer, no deps
//	test.Thing/ (empty impl), test.Thing/plain   closers, no deps
//	test.Store/deps        bus (test.Bus, required), db (db.Pool), tools (test.Tool, many)
//	test.Pool/many         tools (test.Tool, many, required)
//	test.Catalog/items     an ItemResolver serving settings.items
//	test.Wire/ok, test.Wire/fail   Wireable
//	test.Binder/ok         DeploymentBinder
//	test.Nil/typed         returns a typed nil closer
//	agent.Engine/fake      an engine; deps bus (test.Bus), db (db.Pool), tool (test.Tool)
//	agent.Engine/notengine a value that is no engine
//	hook.<slot>/ok         a hook of the slot; hook.referee/wrong is a Preparer
func testRegistry(j *journal) *resource.Registry {
	reg := resource.NewRegistry()
	engineDeps := []resource.DepSpec{{Name: "bus", Type: "test.Bus"}, {Name: "db", Type: "db.Pool"}, {Name: "tool", Type: "test.Tool"}}
	reg.MustRegister(
		fakeFactory(j, resource.Spec{Kind: "test.Bus", Impl: "memory"}, plain),
		fakeFactory(j, resource.Spec{Kind: "test.Thing"}, plain),
		fakeFactory(j, resource.Spec{Kind: "test.Thing", Impl: "plain"}, plain),
		fakeFactory(j, resource.Spec{Kind: "test.Store", Impl: "deps", Deps: []resource.DepSpec{
			{Name: "bus", Type: "test.Bus", Required: true},
			{Name: "db", Type: "db.Pool"},
			{Name: "tools", Type: "test.Tool", Many: true},
		}}, plain),
		fakeFactory(j, resource.Spec{Kind: "test.Pool", Impl: "many", Deps: []resource.DepSpec{
			{Name: "tools", Type: "test.Tool", Many: true, Required: true},
		}}, plain),
		fakeFactory(j, resource.Spec{Kind: "test.Catalog", Impl: "items", ItemType: "test.Tool"},
			func(t *thing, s fakeSettings) any { return &catalog{thing: t, items: s.Items} }),
		fakeFactory(j, resource.Spec{Kind: "test.Wire", Impl: "ok"}, func(t *thing, _ fakeSettings) any { return &wirer{thing: t} }),
		fakeFactory(j, resource.Spec{Kind: "test.Wire", Impl: "fail"}, func(t *thing, _ fakeSettings) any { return &wirer{thing: t, fail: true} }),
		fakeFactory(j, resource.Spec{Kind: "test.Binder", Impl: "ok"}, func(t *thing, _ fakeSettings) any { return &binder{thing: t} }),
		fakeFactory(j, resource.Spec{Kind: "test.Nil", Impl: "typed"}, func(*thing, fakeSettings) any { return (*thing)(nil) }),
		fakeFactory(j, resource.Spec{Kind: "agent.Engine", Impl: "fake", Deps: engineDeps},
			func(t *thing, _ fakeSettings) any { return &engine{thing: t} }),
		fakeFactory(j, resource.Spec{Kind: "agent.Engine", Impl: "notengine"}, plain),
		fakeFactory(j, resource.Spec{Kind: "hook.prepare", Impl: "ok"}, func(t *thing, _ fakeSettings) any { return preparer{t} }),
		fakeFactory(j, resource.Spec{Kind: "hook.observe", Impl: "ok"}, func(t *thing, _ fakeSettings) any { return observer{t} }),
		fakeFactory(j, resource.Spec{Kind: "hook.referee", Impl: "ok", Deps: []resource.DepSpec{{Name: "bus", Type: "test.Bus"}}},
			func(t *thing, _ fakeSettings) any { return referee{t} }),
		fakeFactory(j, resource.Spec{Kind: "hook.commit", Impl: "ok"}, func(t *thing, _ fakeSettings) any { return committer{t} }),
		fakeFactory(j, resource.Spec{Kind: "hook.referee", Impl: "wrong"}, func(t *thing, _ fakeSettings) any { return preparer{t} }),
	)
	return reg
}

// fixedEnv is a LookupEnv with one variable set.
func fixedEnv(name string) (string, bool) {
	if name == "CORRAL_TEST_SET" {
		return "value", true
	}
	return "", false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
