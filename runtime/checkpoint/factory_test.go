package checkpoint_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The core backend is kind checkpoint.Store, impl workspace, with one
// required dep "workspace" of type workspace.Workspace.
// REF 1.8.1
func TestFactorySpec(t *testing.T) {
	t.Parallel()
	assert.Equal(t, resource.Spec{
		Kind: "checkpoint.Store",
		Impl: "workspace",
		Deps: []resource.DepSpec{{Name: "workspace", Type: "workspace.Workspace", Required: true}},
	}, checkpoint.Factory().Spec())
	reg := resource.NewRegistry()
	require.NoError(t, reg.Register(workspace.Factory(), checkpoint.Factory()))
	assert.Equal(t, workspace.Factory().Spec().Kind, checkpoint.Factory().Spec().Deps[0].Type,
		"the dep type is the kind the workspace factory builds")
}

func buildStore(t *testing.T, settings string, deps map[string]any) (any, error) {
	t.Helper()
	return checkpoint.Factory().New(context.Background(), resource.Input{
		Name: "checkpoints", Settings: json.RawMessage(settings), Deps: deps,
	})
}

// The prefix setting is optional, defaults to agent/checkpoints and is
// trimmed of '/'; unknown settings are Validation errors.
// REF 1.8.1
func TestFactorySettings(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t)
	deps := map[string]any{"workspace": ws}
	for settings, prefix := range map[string]string{
		``:                       "agent/checkpoints",
		`{}`:                     "agent/checkpoints",
		`null`:                   "agent/checkpoints",
		`{"prefix": ""}`:         "agent/checkpoints",
		`{"prefix": "/runs/a/"}`: "runs/a",
	} {
		v, err := buildStore(t, settings, deps)
		require.NoError(t, err, settings)
		st, ok := v.(*checkpoint.Store)
		require.True(t, ok, "%T", v)
		assert.Equal(t, prefix, st.Prefix(), settings)
	}
	for _, sync := range []string{"wave", "turn", "none"} {
		v, err := buildStore(t, `{"sync": "`+sync+`"}`, deps)
		require.NoError(t, err, sync)
		assert.Equal(t, checkpoint.Sync(sync), v.(*checkpoint.Store).Sync())
	}
	for settings, mention := range map[string]string{
		`{"prefix": "x", "prefx": "y"}`: "prefx",
		`{"prefix": 3}`:                 "prefix",
		`[]`:                            "settings",
		`{"sync": "always"}`:            "always",
	} {
		_, err := buildStore(t, settings, deps)
		require.ErrorIs(t, err, fault.Validation, settings)
		assert.Contains(t, err.Error(), mention)
		assert.Contains(t, err.Error(), `"checkpoints"`, "the error names the resource")
	}
	// A prefix that leaves the workspace is Forbidden, not Validation.
	_, err := buildStore(t, `{"prefix": "../up"}`, deps)
	require.ErrorIs(t, err, fault.Forbidden)
	assert.Contains(t, err.Error(), "../up")
	assert.Contains(t, err.Error(), `"checkpoints"`, "the error names the resource")
}

// A missing or mistyped workspace dep is a Validation error naming the
// role.
// REF 1.8.1
func TestFactoryDeps(t *testing.T) {
	t.Parallel()
	for name, deps := range map[string]map[string]any{
		"no deps":     nil,
		"nil value":   {"workspace": nil},
		"wrong type":  {"workspace": "a string"},
		"other store": {"workspace": checkpoint.NewMemory()},
	} {
		_, err := buildStore(t, `{}`, deps)
		require.ErrorIs(t, err, fault.Validation, name)
		assert.Contains(t, err.Error(), `"workspace"`, name)
	}
}

// Resume needs a store that deletes: the factory's value and the memory
// store implement CheckpointLister and CheckpointDeleter besides
// CheckpointStore.
// REF 1.8.3
func TestStoresImplementExtensions(t *testing.T) {
	t.Parallel()
	v, err := buildStore(t, `{}`, map[string]any{"workspace": newWorkspace(t)})
	require.NoError(t, err)
	for _, s := range []any{v, checkpoint.NewMemory()} {
		_, ok := s.(agent.CheckpointStore)
		assert.True(t, ok, "%T is a CheckpointStore", s)
		_, ok = s.(agent.CheckpointDeleter)
		assert.True(t, ok, "%T is a CheckpointDeleter", s)
		_, ok = s.(agent.CheckpointLister)
		assert.True(t, ok, "%T is a CheckpointLister", s)
	}
}

// Only the store side of the rule can be tested here: nothing is written to
// a workspace unless a store is built on it and saves, and no store exists
// without its workspace. That the host's Checkpoint call is a no-op when the
// document names no checkpoint_store is the runtime's, and tested there.
// REF 1.8.2
func TestNoStoreNoRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := newWorkspace(t)
	names, err := ws.List(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, names, "a workspace alone keeps no checkpoints")
	_, err = buildStore(t, `{}`, nil)
	require.ErrorIs(t, err, fault.Validation, "no implicit store")

	v, err := buildStore(t, `{}`, map[string]any{"workspace": ws})
	require.NoError(t, err)
	names, err = ws.List(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, names, "building a store writes nothing")
	require.NoError(t, v.(agent.CheckpointStore).Save(ctx, checkpointtest.NewCheckpoint("run-1", 1)))
	names, err = ws.List(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"agent/"}, names)
}

// customSettings is the settings schema of a backend outside this package.
type customSettings struct {
	Label string `json:"label"`
}

// Other backends register next to the core one under their own impl, own
// their settings, and prove themselves with the same suite.
// REF 1.8.4
func TestOtherBackendRegistersBeside(t *testing.T) {
	t.Parallel()
	custom := resource.FactoryFunc(resource.Spec{Kind: checkpoint.Kind, Impl: "custom"},
		func(_ context.Context, in resource.Input) (any, error) {
			s, err := resource.DecodeTyped[customSettings](in.Settings)
			if err != nil {
				return nil, err
			}
			if s.Label == "" {
				return nil, fault.New(fault.Validation, "build custom store", "label is required")
			}
			return checkpoint.NewMemory(), nil
		})
	reg := resource.NewRegistry()
	require.NoError(t, reg.Register(workspace.Factory(), checkpoint.Factory(), custom))
	f, ok := reg.Lookup(checkpoint.Kind, "custom")
	require.True(t, ok)
	_, err := f.New(context.Background(), resource.Input{Settings: json.RawMessage(`{"prefix": "x"}`)})
	require.ErrorIs(t, err, fault.Validation, "the core store's settings are not the custom one's")
	checkpointtest.Run(t, func(t *testing.T) agent.CheckpointStore {
		v, err := f.New(context.Background(), resource.Input{Settings: json.RawMessage(`{"label": "a"}`)})
		require.NoError(t, err)
		return v.(agent.CheckpointStore)
	})
}
