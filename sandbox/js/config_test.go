package js

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A static config is made into a script value once per VM and kept: every
// call of the node sees it, deeply frozen, whether its script shares a
// global object or needs its own; a config that is not static is made at
// each call, so a changed map is seen.
func TestStaticConfig(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	board := agent.NewBoard()
	static := map[string]any{"label": "bug", "limits": map[string]any{"n": 3.0}}
	invoke := func(src string, cfg map[string]any, isStatic bool) {
		t.Helper()
		require.NoError(t, rt.Invoke(context.Background(), sandbox.Invocation{Node: "n", Board: board,
			Script: sandbox.Script{Source: src}, Config: cfg, StaticConfig: isStatic}))
	}
	shared := `board.setVar("shared", config.label + config.limits.n + Object.isFrozen(config.limits))`
	own := `leaked = config.label; board.setVar("own", leaked + Object.isFrozen(config))`
	for range 3 {
		invoke(shared, static, true)
		invoke(own, static, true)
	}
	assert.Equal(t, "bug3true", board.Vars["shared"])
	assert.Equal(t, "bugtrue", board.Vars["own"])
	c := rt.realms.get()
	require.NotNil(t, c)
	assert.Len(t, c.configs, 1, "made once, kept by the map's identity")
	rt.realms.put(c)

	invoke(`board.setVar("after", typeof leaked)`, static, true)
	assert.Equal(t, "undefined", board.Vars["after"], "an own global object is still the call's own")

	changing := map[string]any{"label": "a"}
	invoke(`board.setVar("changing", config.label)`, changing, false)
	changing["label"] = "b"
	invoke(`board.setVar("changing", config.label)`, changing, false)
	assert.Equal(t, "b", board.Vars["changing"])
}

// A kept config still counts against each call's memory budget: a call
// with a tighter memory_bytes than the config's size stops as before.
func TestStaticConfigBudget(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	big := map[string]any{"text": string(make([]byte, 64<<10))}
	inv := sandbox.Invocation{Node: "n", Board: agent.NewBoard(), Script: sandbox.Script{Source: `board.setVar("n", config.text.length)`},
		Config: big, StaticConfig: true}
	require.NoError(t, rt.Invoke(context.Background(), inv))
	inv.Limits = sandbox.Limits{MemoryBytes: 16 << 10}
	err = rt.Invoke(context.Background(), inv)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitMemory, le.Limit)
}
