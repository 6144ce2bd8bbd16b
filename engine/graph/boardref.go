package graph

import (
	"strings"

	"github.com/corral-rt/corral/sandbox"
)

// refPrefix starts a board reference.
const refPrefix = "${board."

// ResolveString resolves the ${board.path} references in s against vars
// (REF 5.2.6) with sandbox.Resolve, the resolver scripts reach as
// board.resolve, so a node's config and its script agree:
//
//   - the path is dotted; an exact var named "a.b" takes priority over the
//     var "a" walked to its field "b"; the walk goes through maps, arrays
//     (by index) and the JSON fields of Go values;
//   - ${board.x:default} gives default when x is not set; a default that is
//     a JSON literal (3, true, "s", {"a":1}) keeps its type, any other text
//     is a string;
//   - a string that is exactly one reference gives the value with its type;
//     a reference inside other text is replaced by the value, strings as
//     they are and other values as JSON;
//   - \${...} is the literal text ${...}; any other ${...} is left as it is.
//
// A missing var without a default, an empty path or an unclosed "${" is a
// Validation error.
func ResolveString(s string, vars map[string]any) (any, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	if !strings.HasPrefix(s, refPrefix) {
		// Only a string that starts with a reference can be one typed
		// reference; anything else resolves to text.
		return sandbox.ResolveString(vars, s)
	}
	return sandbox.Resolve(vars, s)
}

// ResolveRefs returns a copy of v with every string in it (map values and
// slice elements, at any depth; not map keys) resolved by ResolveString.
// v is not changed.
func ResolveRefs(v any, vars map[string]any) (any, error) {
	switch t := v.(type) {
	case string:
		return ResolveString(t, vars)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			r, err := ResolveRefs(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := ResolveRefs(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// hasRefs reports whether a string in config, outside its literal keys,
// holds a reference ("${").
func hasRefs(config map[string]any, literal map[string]bool) bool {
	for k, v := range config {
		if !literal[k] && valueHasRefs(v) {
			return true
		}
	}
	return false
}

func valueHasRefs(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, "${")
	case map[string]any:
		for _, e := range t {
			if valueHasRefs(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if valueHasRefs(e) {
				return true
			}
		}
	}
	return false
}

func abbreviate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
