package js

import (
	"context"
	"encoding/json"
	"github.com/corral-rt/corral/fault"
	"testing"
	"time"

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
		inv := sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: src}, Config: cfg}
		if isStatic {
			inv.Script.Config, inv.Config = cfg, nil
		}
		require.NoError(t, sandbox.InvokeOn(context.Background(), rt, inv, board))
	}
	shared := `board.setVar("shared", config.label + config.limits.n + Object.isFrozen(config.limits))`
	own := `leaked = config.label; board.setVar("own", leaked + Object.isFrozen(config))`
	for range 3 {
		invoke(shared, static, true)
		invoke(own, static, true)
	}
	assert.Equal(t, "bug3true", board.Vars["shared"])
	assert.Equal(t, "bugtrue", board.Vars["own"])
	c := rt.realms.get("")
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
	inv := sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `board.setVar("n", config.text.length)`, Config: big}}
	_, err = rt.Invoke(context.Background(), inv)
	require.NoError(t, err)
	inv.Limits = sandbox.Limits{MemoryBytes: 16 << 10}
	_, err = rt.Invoke(context.Background(), inv)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitMemory, le.Limit)
}

// A VM keeps the scripts it ran by where their strings are: the next call
// of the same strings finds its program in the VM, without the runtime's
// cache; another copy of the same source is found in that cache; a script
// that does not compile leaves no slot taken.
func TestScriptsFoundInTheVM(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	board := agent.NewBoard()
	src := `board.setVar("n", (board.getVar("n") || 0) + 1)`
	invoke := func(source string) error {
		return sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: source}}, board)
	}
	require.NoError(t, invoke(src))
	rt.programs = newProgramCache(4) // forget every compiled program
	require.NoError(t, invoke(src))
	assert.Zero(t, rt.programs.len(), "found in the VM, not compiled again")
	same := string([]byte(src)) // equal text, another string
	require.NoError(t, invoke(same))
	assert.Equal(t, 1, rt.programs.len(), "another copy is compiled once into the runtime's cache")
	assert.Equal(t, 3.0, board.Vars["n"])

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 3 {
		err := sandbox.InvokeOn(ctx, rt, sandbox.Invocation{Node: "bad", Script: sandbox.Script{Source: `)(`}}, board)
		assert.ErrorIs(t, err, fault.Validation)
	}
	require.NoError(t, invoke(src), "the slot was left")
}

// logABI offers log alone.
type logABI struct{}

func (logABI) Functions() []string { return []string{"log"} }

func (logABI) Call(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`null`), nil
}

// Calls of one static config with ABIs of other functions, taking turns,
// each see the config and their own host functions; the VM keeps one
// shared global object per config, made again when the functions change,
// not one per set of functions.
func TestStaticConfigAcrossABIs(t *testing.T) {
	t.Parallel()
	rt, err := New(Options{PoolSize: 1})
	require.NoError(t, err)
	defer rt.Close()
	cfg := map[string]any{"label": "bug"}
	for i := range 20 {
		var abi sandbox.ABI = noABI{}
		want := "undefined"
		if i%2 == 1 {
			abi, want = logABI{}, "function"
		}
		board := agent.NewBoard()
		require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", ABI: abi,
			Script: sandbox.Script{Source: `board.setVar("r", config.label + "," + typeof host.log)`, Config: cfg}}, board))
		assert.Equal(t, "bug,"+want, board.Vars["r"], "call %d", i)
	}
	c := rt.realms.get("")
	require.NotNil(t, c)
	defer rt.realms.put(c)
	require.Len(t, c.configs, 1)
	for _, sc := range c.configs {
		assert.Same(t, c.apis.layer, sc.layer, "the global of the last call's layer is the one kept")
	}
}
