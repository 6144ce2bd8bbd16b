package graph_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func refVars() map[string]any {
	return map[string]any{
		"name":  "ada",
		"n":     3.0,
		"flag":  true,
		"user":  map[string]any{"name": "grace", "tags": []any{"a", "b"}},
		"a.b":   "exact",
		"a":     map[string]any{"b": "walked", "c": "only walked"},
		"msg":   message.NewTextMessage(message.RoleUser, "hi"),
		"empty": "",
		"null":  nil,
	}
}

// ${board.path} references resolve against the board vars.
func TestResolveString(t *testing.T) {
	t.Parallel()
	// REF 5.2.6
	tests := []struct {
		name string
		in   string
		want any
	}{
		{"plain text", "no refs here", "no refs here"},
		{"standalone keeps the type", "${board.n}", 3.0},
		{"standalone bool", "${board.flag}", true},
		{"standalone object", "${board.user}", map[string]any{"name": "grace", "tags": []any{"a", "b"}}},
		{"interpolated string", "hi ${board.name}!", "hi ada!"},
		{"interpolated number as JSON", "n=${board.n}", "n=3"},
		{"interpolated object as JSON", "u=${board.user}", `u={"name":"grace","tags":["a","b"]}`},
		{"dotted path", "${board.user.name}", "grace"},
		{"array index", "${board.user.tags.1}", "b"},
		{"exact var wins", "${board.a.b}", "exact"},
		{"walk when no exact var", "${board.a.c}", "only walked"},
		{"exported fields by JSON name", "${board.msg.role}", "user"},
		{"default when missing", "${board.missing:fallback}", "fallback"},
		{"JSON default keeps the type", "${board.missing:42}", 42.0},
		{"JSON object default", `${board.missing:{"k":[1]}}`, map[string]any{"k": []any{1.0}}},
		{"quoted default", `${board.missing:"7"}`, "7"},
		{"default unused when set", "${board.name:other}", "ada"},
		{"empty default", "${board.missing:}", ""},
		{"escaped", `\${board.name}`, "${board.name}"},
		{"escaped inside text", `say \${board.name} to ${board.name}`, "say ${board.name} to ada"},
		{"other ${} left alone", "${env:HOME} ${board.name}", "${env:HOME} ada"},
		{"two refs", "${board.name}${board.n}", "ada3"},
		{"null standalone", "${board.null}", nil},
		{"empty string standalone", "${board.empty}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := graph.ResolveString(tt.in, refVars())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// A missing var without a default, an empty path or an unclosed reference
// is a Validation error.
func TestResolveStringErrors(t *testing.T) {
	t.Parallel()
	// REF 5.2.6 (a missing var without a default → Validation)
	for _, in := range []string{"${board.missing}", "x ${board.user.nope} y", "${board.}", "${board.name"} {
		_, err := graph.ResolveString(in, refVars())
		assert.ErrorIs(t, err, fault.Validation, in)
	}
}

// ResolveRefs resolves strings at any depth and leaves its input alone.
func TestResolveRefs(t *testing.T) {
	t.Parallel()
	// REF 5.2.6
	in := map[string]any{"a": []any{"${board.n}", map[string]any{"b": "hi ${board.name}"}}, "k": 1, "${board.name}": "key"}
	got, err := graph.ResolveRefs(in, refVars())
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": []any{3.0, map[string]any{"b": "hi ada"}}, "k": 1, "${board.name}": "key"}, got)
	assert.Equal(t, "${board.n}", in["a"].([]any)[0], "the input is unchanged")
	_, err = graph.ResolveRefs([]any{"${board.missing}"}, nil)
	assert.ErrorIs(t, err, fault.Validation)
}

// FuzzBoardRef checks that resolving never panics, that text without "${"
// comes back unchanged, and that errors are Validation errors.
func FuzzBoardRef(f *testing.F) {
	for _, s := range []string{"", "plain", "${board.name}", "a ${board.user.tags.0} b", "${board.x:{\"a\":\"}\"}}",
		`\${board.name}`, "${board.", "${", "${board.a.b}", "${board.n:3}${board.name}", "${{}}", "${board.:}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := graph.ResolveString(s, refVars())
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("%q: error without the Validation kind: %v", s, err)
			}
			return
		}
		if !strings.Contains(s, "${") && got != s {
			t.Fatalf("%q changed to %#v without a reference", s, got)
		}
		if str, ok := got.(string); ok && utf8.ValidString(s) && !strings.Contains(s, "${board.") && !strings.Contains(s, `\${`) && str != s {
			t.Fatalf("%q has no board reference but became %q", s, str)
		}
	})
}
