package sandbox_test

import (
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type pathHolder struct {
	Name string `json:"name"`
}

// ${board.path} references resolve with the rules of the graph config.
// REF 5.2.6
func TestResolve(t *testing.T) {
	t.Parallel()
	vars := map[string]any{
		"n": 3.0, "s": "text", "obj": map[string]any{"list": []any{"a", map[string]any{"deep": true}}},
		"a.b": "exact", "a": map[string]any{"b": "walked"}, "typed": pathHolder{Name: "go"},
	}
	for _, tc := range []struct {
		in   string
		want any
	}{
		{"${board.n}", 3.0},
		{"${board.obj.list.1.deep}", true},
		{"${board.a.b}", "exact"},
		{"${board.typed.name}", "go"},
		{"n is ${board.n}", "n is 3"},
		{"${board.obj.list.0}${board.s}", "atext"},
		{"list: ${board.obj.list}", `list: ["a",{"deep":true}]`},
		{"${board.missing:42}", 42.0},
		{"${board.missing:[1,2]}", []any{1.0, 2.0}},
		{"${board.missing:{\"k\":1}}", map[string]any{"k": 1.0}},
		{"${board.missing:plain words}", "plain words"},
		{"x=${board.missing:7}", "x=7"},
		{`\${board.n}`, "${board.n}"},
		{"${other.n} stays", "${other.n} stays"},
		{"no refs", "no refs"},
	} {
		got, err := sandbox.Resolve(vars, tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	s, err := sandbox.ResolveString(vars, "${board.n}")
	require.NoError(t, err)
	assert.Equal(t, "3", s)
	for _, bad := range []string{"${board.missing}", "${board.obj.list.9}", "${board.}", "${board.n", "${board.s.x}"} {
		_, err := sandbox.Resolve(vars, bad)
		require.Error(t, err, bad)
		assert.True(t, fault.Is(err, fault.Validation), bad)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"${board.a}", "x ${board.a.b:1} y", `\${board.a}`, "${board.a:{}", "${}"} {
		f.Add(s)
	}
	vars := map[string]any{"a": map[string]any{"b": []any{1.0}}}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := sandbox.Resolve(vars, s)
		if err != nil {
			assert.True(t, fault.Is(err, fault.Validation), "%q: %v", s, err)
			assert.Nil(t, v)
		}
		_, _ = sandbox.ResolveString(vars, s)
	})
}
