package local_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/delegation/local"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deployDoc builds a deployment of the delegation resources and one
// scripted agent, writer, run by eng.
func deployDoc(t *testing.T, eng *agenttest.Engine, resources string) (*deploy.Result, error) {
	t.Helper()
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), agenttest.Factory("scripted", eng))
	reg.MustRegister(local.Factories()...)
	doc, err := deploy.ParseWithConfig([]byte(`version: v1
resources:
  events: {kind: event.Bus, impl: memory}
`+resources+`
agents:
  writer:
    card: {name: Writer}
    engine: {kind: agent.Engine, impl: scripted}
`), deploy.ParseConfig{Filename: "deploy.yaml"})
	require.NoError(t, err)
	r, err := deploy.Deploy(context.Background(), doc, deploy.Options{Registry: reg})
	if err == nil {
		t.Cleanup(func() { _ = r.Close() })
	}
	return r, err
}

func serviceOf(t *testing.T, r *deploy.Result, name string) *local.Service {
	t.Helper()
	v, ok := r.Value(name)
	require.True(t, ok)
	svc, ok := v.(*local.Service)
	require.True(t, ok, "%T", v)
	return svc
}

// REF 6.2.2: the resources delegation.Directory/local (bound to the
// deployment at wire time), delegation.Service/local (deps directory,
// required, and session_provider; settings max_concurrency=4,
// max_depth=8, timeout, idempotency_retention, defer_workers) and
// delegation.SessionProvider/random, and the delegation tool source.
func TestResources(t *testing.T) {
	t.Parallel()
	specs := map[string]resource.Spec{}
	for _, f := range local.Factories() {
		specs[f.Spec().Key()] = f.Spec()
	}
	require.Contains(t, specs, "delegation.Directory/local")
	require.Contains(t, specs, "delegation.SessionProvider/random")
	require.Contains(t, specs, "tool.Assembly/delegation", "the delegation tool source")
	svcSpec := specs["delegation.Service/local"]
	dep, ok := svcSpec.MatchDep("directory")
	require.True(t, ok)
	assert.True(t, dep.Required)
	dep, ok = svcSpec.MatchDep("session_provider")
	require.True(t, ok)
	assert.False(t, dep.Required)

	eng := agenttest.New(agenttest.Say("drafted"))
	r, err := deployDoc(t, eng, `  directory: {kind: delegation.Directory, impl: local}
  sessions: {kind: delegation.SessionProvider, impl: random}
  defaults:
    kind: delegation.Service
    impl: local
    deps: {directory: directory}
  tuned:
    kind: delegation.Service
    impl: local
    deps: {directory: directory, session_provider: sessions}
    settings: {max_concurrency: 2, max_depth: 5, timeout: 30s, idempotency_retention: 1m, defer_workers: 1}
`)
	require.NoError(t, err)
	assert.Equal(t, local.ServiceSettings{MaxConcurrency: 4, MaxDepth: 8,
		IdempotencyRetention: local.Duration(10 * time.Minute), DeferWorkers: 4}, serviceOf(t, r, "defaults").Settings())
	assert.Equal(t, local.ServiceSettings{MaxConcurrency: 2, MaxDepth: 5, Timeout: local.Duration(30 * time.Second),
		IdempotencyRetention: local.Duration(time.Minute), DeferWorkers: 1}, serviceOf(t, r, "tuned").Settings())

	v, _ := r.Value("directory")
	list, err := v.(delegation.Directory).List(context.Background())
	require.NoError(t, err, "bound at wire time")
	require.Len(t, list, 1)
	assert.Equal(t, "Writer", list[0].Card.Name)

	resp, err := serviceOf(t, r, "tuned").Delegate(context.Background(), ask("writer", "go"))
	require.NoError(t, err)
	assert.Equal(t, "drafted", agenttest.ReplyText(resp.Output), "without a manager the service runs the agent itself")
}

// REF 6.2.2: settings are strict and non-negative; the directory is
// a required dependency.
func TestResourceErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"unknown setting": `  directory: {kind: delegation.Directory, impl: local}
  d: {kind: delegation.Service, impl: local, deps: {directory: directory}, settings: {max_workers: 3}}
`,
		"negative depth": `  directory: {kind: delegation.Directory, impl: local}
  d: {kind: delegation.Service, impl: local, deps: {directory: directory}, settings: {max_depth: -1}}
`,
		"negative workers": `  directory: {kind: delegation.Directory, impl: local}
  d: {kind: delegation.Service, impl: local, deps: {directory: directory}, settings: {defer_workers: -2}}
`,
		"bad timeout": `  directory: {kind: delegation.Directory, impl: local}
  d: {kind: delegation.Service, impl: local, deps: {directory: directory}, settings: {timeout: soon}}
`,
		"no directory": `  d: {kind: delegation.Service, impl: local}
`,
		"directory settings": `  directory: {kind: delegation.Directory, impl: local, settings: {agents: [a]}}
`,
	}
	for name, res := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := deployDoc(t, agenttest.New(), res)
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
		})
	}
}

// REF 6.2.8: each generation builds its own directory and service,
// bound to that generation; a delegation in flight on the old generation
// finishes there, and the old directory stays frozen to its agents.
func TestGenerations(t *testing.T) {
	t.Parallel()
	const res = `  directory: {kind: delegation.Directory, impl: local}
  delegation: {kind: delegation.Service, impl: local, deps: {directory: directory}}
`
	g := agenttest.NewGate()
	old, err := deployDoc(t, agenttest.New(agenttest.WaitGate(g), agenttest.Say("old")), res)
	require.NoError(t, err)
	done := make(chan delegation.Response, 1)
	go func() {
		r, _ := serviceOf(t, old, "delegation").Delegate(context.Background(), ask("writer", "go"))
		done <- r
	}()
	<-g.Reached()
	next, err := deployDoc(t, agenttest.New(agenttest.Say("new")), res)
	require.NoError(t, err)
	resp, err := serviceOf(t, next, "delegation").Delegate(context.Background(), ask("writer", "go"))
	require.NoError(t, err)
	assert.Equal(t, "new", agenttest.ReplyText(resp.Output))
	g.Open()
	assert.Equal(t, "old", agenttest.ReplyText((<-done).Output), "the in-flight delegation finished on its generation")
	oldDir, _ := old.Value("directory")
	oldAgent, ok := oldDir.(local.AgentSource).Agent("writer")
	require.True(t, ok)
	newAgent, _ := next.Agent("writer")
	assert.NotSame(t, newAgent, oldAgent)
}
