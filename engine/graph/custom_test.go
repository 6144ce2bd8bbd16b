package graph_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildDeployment builds testdata/graph/custom/deploy.yaml after edit.
func buildDeployment(t *testing.T, edit func(string) string) (*runtime.Runtime, error) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(testdata, "custom"))
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(dir, "deploy.yaml"))
	require.NoError(t, err)
	if edit != nil {
		src = []byte(edit(string(src)))
	}
	doc, err := deploy.ParseWithConfig(src, deploy.ParseConfig{Filename: "deploy.yaml", BaseDir: dir})
	require.NoError(t, err)
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), js.Factory(), graph.Factory(), graph.NodeTypeFactory())
	app, err := runtime.NewBuilder(reg).Build(context.Background(), doc)
	if err == nil {
		t.Cleanup(func() { _ = app.Close() })
	}
	return app, err
}

// A deployment mounts a graph.NodeType/script resource under node_type.*;
// a session turn runs a graph node of that type in the goja runtime with
// its config as the script's config.
func TestNodeTypeDeployment(t *testing.T) {
	t.Parallel()
	// REF 5.3.4 (a custom node type resource used by a deployed graph)
	app, err := buildDeployment(t, nil)
	require.NoError(t, err)
	lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "echo", ContextID: "c1"})
	require.NoError(t, err)
	defer lease.Close()
	sink := &textSink{}
	turn, err := lease.Session().Start(context.Background(),
		agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi there")}, session.SinkSpec{ID: "console", Sink: sink})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := turn.Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
	require.Len(t, res.Output, 1)
	assert.Equal(t, "You said: HI THERE", res.Output[0].Text())
	assert.Equal(t, "You said: HI THERE", sink.String())
	assert.EqualValues(t, 1, res.LastBoard.Vars["shouts"])
}

// A deployed node type named like the built-in script type, or like
// another mounted type, fails the build with a Conflict naming both.
func TestNodeTypeDeploymentClash(t *testing.T) {
	t.Parallel()
	// REF 5.3.4 (a type name that clashes with a built-in or another mounted type → error)
	_, err := buildDeployment(t, func(s string) string { return strings.Replace(s, "type: echo\n", "type: script\n", 1) })
	require.Error(t, err)
	assert.ErrorIs(t, err, fault.Conflict)
	assert.ErrorContains(t, err, `deps.node_type.echo: node type "script" clashes with the built-in node type "script"`)

	_, err = buildDeployment(t, func(s string) string {
		return strings.Replace(s, "node_type.echo: echo_type}", "node_type.echo: echo_type, node_type.other: echo_type}", 1)
	})
	require.Error(t, err)
	assert.ErrorIs(t, err, fault.Conflict)
	assert.ErrorContains(t, err, `deps.node_type.echo and deps.node_type.other both mount node type "echo"`)
}

// relay returns a node type "relay" running source: it must read the
// channel named by config.from, may read the var topic, must write the
// var named by config.into, and may append to the channel log.
func relay(t testing.TB, name, source string) *graph.ScriptNodeType {
	t.Helper()
	nt, err := graph.NewScriptNodeType(graph.ScriptNodeTypeConfig{
		Type: name, Desc: "relays", Source: source, Runtime: newJS(t),
		Reads: []graph.Role{
			{Kind: graph.RoleMessages, ConfigKey: "from", Required: true},
			{Kind: graph.RoleVar, Name: "topic"},
		},
		Writes: []graph.Role{
			{Kind: graph.RoleVar, ConfigKey: "into", Required: true},
			{Kind: graph.RoleMessages, Name: "log"},
		},
	})
	require.NoError(t, err)
	return nt
}

// Node types given twice in Options, or named like a built-in, are a
// Conflict naming both.
func TestNodeTypeClash(t *testing.T) {
	t.Parallel()
	// REF 5.3.4 (a type name that clashes with a built-in or another mounted type → error)
	doc := parseDoc(t, "{name: g, entry: a, nodes: [{id: a, type: script, config: {source: x}}]}")
	for name, tc := range map[string]struct {
		types []graph.NodeType
		want  string
	}{
		"built-in": {[]graph.NodeType{relay(t, "script", "x")},
			`build graph: node types: node_types[0] "script" clashes with the built-in node type "script"`},
		"twice": {[]graph.NodeType{relay(t, "relay", "x"), relay(t, "other", "x"), relay(t, "relay", "y")},
			`build graph: node types: node_types[2] "relay" clashes with node_types[0] "relay"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := graph.Build(context.Background(), doc, graph.Options{NodeTypes: tc.types})
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Conflict)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// Static roles bind to each node at Build: a required config_key role needs
// its key, and the key must hold a literal name. Each custom-bad-*.yaml
// fixture fails with the error in its golden file.
func TestNodeTypeBuildRoles(t *testing.T) {
	t.Parallel()
	// REF 5.1.5 (static read/write roles are resolved at Build)
	// REF 5.3.4 (static read/write roles are enforced at Build)
	files, err := filepath.Glob(filepath.Join(testdata, "custom-bad-*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	rt := newJS(t)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := graph.Options{NodeTypes: []graph.NodeType{relay(t, "relay", "board.setVar(config.into, 1)")},
				Runtimes: map[string]sandbox.Runtime{"js": rt}}
			_, err := graph.Build(context.Background(), loadDoc(t, name+".yaml"), opts)
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
			golden(t, name+".golden", err.Error()+"\n")
		})
	}
}

const relayDoc = `
name: g
entry: n
nodes:
  - id: n
    type: relay
    config: {from: inbox, into: answer, text: "${board.text:hello}"}
`

// Roles are checked on every call: required reads before the node runs
// (no step start), then after it ran the required writes and that it wrote
// nothing its writes do not declare. Violations are Validation errors
// naming the node and the role.
func TestNodeTypeRunRoles(t *testing.T) {
	t.Parallel()
	// REF 5.2.3 (step 3: check read roles; step 6: check write roles)
	// REF 5.3.4 (static read/write roles are enforced on every call)
	inbox := func(b *agent.Board) { b.Append("inbox", userMessage("q")) }
	for name, tc := range map[string]struct {
		source  string
		setup   func(*agent.Board)
		want    string // the error; "" when the run succeeds
		started bool   // whether step start was published
	}{
		"ok": {source: `board.setVar(config.into, config.text + " " + board.getVar("topic")); board.appendChannel("log", {role: "assistant", parts: [{type: "text", text: "x"}]});`,
			setup: func(b *agent.Board) { inbox(b); b.Vars["topic"] = "t" }},
		"optional read absent": {source: `board.setVar(config.into, board.hasVar("topic"))`, setup: inbox},
		"required write already there": {source: `"nothing"`,
			setup: func(b *agent.Board) { inbox(b); b.Vars["answer"] = "old" }},
		"required read missing": {source: `board.setVar("ran", true)`,
			want: `graph "g": node "n": check read roles: node "n": required read messages "inbox" (config.from) is not on the board`},
		"required read empty channel": {source: `board.setVar("ran", true)`, setup: func(b *agent.Board) { b.Channels["inbox"] = nil },
			want: `graph "g": node "n": check read roles: node "n": required read messages "inbox" (config.from) is not on the board`},
		"required write missing": {source: `board.setVar("answer", 1); board.deleteVar("answer")`, setup: inbox, started: true,
			want: `graph "g": node "n": check write roles: node "n": required write var "answer" (config.into) is not on the board`},
		"undeclared var": {source: `board.setVar(config.into, 1); board.setVar("extra", 2)`, setup: inbox, started: true,
			want: `graph "g": node "n": check write roles: node "n": wrote var "extra", which its writes do not declare`},
		"undeclared delete": {source: `board.setVar(config.into, 1); board.deleteVar("topic")`, started: true,
			setup: func(b *agent.Board) { inbox(b); b.Vars["topic"] = "t" },
			want:  `graph "g": node "n": check write roles: node "n": wrote var "topic", which its writes do not declare`},
		"undeclared channel": {source: `board.setVar(config.into, 1); board.appendChannel("inbox", {role: "assistant", parts: [{type: "text", text: "x"}]})`,
			setup: inbox, started: true,
			want: `graph "g": node "n": check write roles: node "n": wrote messages "inbox", which its writes do not declare`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := buildWith(t, parseDoc(t, relayDoc), newJS(t), graph.Options{NodeTypes: []graph.NodeType{relay(t, "relay", tc.source)}})
			board := agent.NewBoard()
			if tc.setup != nil {
				tc.setup(board)
			}
			host, out, err := execute(t, e, board)
			subjects := host.Subjects()
			if tc.want == "" {
				require.NoError(t, err)
				assert.Contains(t, out.Vars, "answer")
				assert.Contains(t, subjects, event.SubjectStepComplete("run-1", event.Actor("bot", "n")))
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
			var ne *graph.NodeError
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, "n", ne.Node)
			assert.EqualError(t, err, tc.want)
			require.NotNil(t, out)
			assert.NotContains(t, out.Vars, "ran", "a node whose reads fail does not run")
			assert.Equal(t, tc.started, contains(subjects, event.SubjectStepStart("run-1", event.Actor("bot", "n"))))
			assert.Contains(t, subjects, event.SubjectStepError("run-1", event.Actor("bot", "n")))
			assert.NotContains(t, subjects, event.SubjectStepComplete("run-1", event.Actor("bot", "n")))
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// The built-in script type declares no roles: a script node writes what
// it likes.
func TestScriptTypeUnrestricted(t *testing.T) {
	t.Parallel()
	// REF 5.2.3 (nodes without declared roles skip the role checks)
	doc := parseDoc(t, `{name: g, entry: a, nodes: [{id: a, type: script, config: {source: 'board.setVar("any", 1); board.appendChannel("c", {role: "user", parts: [{type: "text", text: "x"}]})'}}]}`)
	_, out, err := execute(t, buildWith(t, doc, newJS(t), graph.Options{}), nil)
	require.NoError(t, err)
	assert.EqualValues(t, 1, out.Vars["any"])
	assert.Len(t, out.Channels["c"], 1)
}

// The graph.NodeType/script factory: its spec, strict settings, the
// required script runtime, and the node type it builds.
func TestNodeTypeFactory(t *testing.T) {
	t.Parallel()
	// REF 5.3.4 (impl script: {type, source, desc, reads/writes}, deps script_runtime required plus optional ones)
	spec := graph.NodeTypeFactory().Spec()
	require.NoError(t, spec.Validate())
	assert.Equal(t, graph.NodeTypeKind, spec.Kind)
	assert.Equal(t, "script", spec.Impl)
	var required []string
	var names []string
	for _, d := range spec.Deps {
		names = append(names, d.Name)
		if d.Required {
			required = append(required, d.Name)
		}
	}
	assert.Equal(t, []string{"script_runtime", "tools", "inference", "router", "workspace", "sandbox"}, names)
	assert.Equal(t, []string{"script_runtime"}, required)

	rt := newJS(t)
	build := func(settings string, deps map[string]any) (any, error) {
		return graph.NodeTypeFactory().New(context.Background(), resource.Input{Name: "nt", Settings: json.RawMessage(settings), Deps: deps})
	}
	v, err := build(`{"type": "relay", "desc": "d", "source": "1", "reads": [{"kind": "var", "name": "a", "required": true}]}`,
		map[string]any{"script_runtime": rt})
	require.NoError(t, err)
	nt, ok := v.(*graph.ScriptNodeType)
	require.True(t, ok, "%T", v)
	assert.Equal(t, "relay", nt.Name())
	assert.Equal(t, "d", nt.Desc())
	assert.Equal(t, []graph.Role{{Kind: graph.RoleVar, Name: "a", Required: true}}, nt.Reads())
	assert.Empty(t, nt.Writes())

	for name, tc := range map[string]struct{ settings, want string }{
		"unknown key":      {`{"type": "x", "source": "1", "extra": 1}`, `unknown field "extra"`},
		"no type":          {`{"source": "1"}`, `new script node type: type is required`},
		"spaced type":      {`{"type": "a b", "source": "1"}`, `type "a b" must not contain spaces`},
		"no source":        {`{"type": "x"}`, `settings.source is required`},
		"empty source":     {`{"type": "x", "source": " "}`, `type "x": source: the script is empty`},
		"bad kind":         {`{"type": "x", "source": "1", "reads": [{"kind": "file", "name": "a"}]}`, `reads[0].kind: "file" is not var or messages`},
		"name and key":     {`{"type": "x", "source": "1", "writes": [{"kind": "var", "name": "a", "config_key": "b"}]}`, `writes[0]: exactly one of name and config_key is required`},
		"neither":          {`{"type": "x", "source": "1", "writes": [{"kind": "var"}]}`, `writes[0]: exactly one of name and config_key is required`},
		"unknown role key": {`{"type": "x", "source": "1", "writes": [{"kind": "var", "name": "a", "mode": 1}]}`, `writes[0]: unknown field "mode"`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := build(tc.settings, map[string]any{"script_runtime": rt})
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
			assert.ErrorContains(t, err, `build node type "nt"`)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err = build(`{"type": "x", "source": "1"}`, nil)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "deps.script_runtime is required")
	_, err = build(`{"type": "x", "source": "1"}`, map[string]any{"script_runtime": 7})
	assert.ErrorContains(t, err, `dep "script_runtime": int is not a sandbox.Runtime`)
}
