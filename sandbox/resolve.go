package sandbox

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
)

// Resolve replaces the ${board.path} references in s with board values
// from vars:
//
//   - path is dotted; it walks nested objects (map[string]any, or any
//     value that marshals to a JSON object) and arrays (by index); a var
//     whose name is the exact path, dots included, wins over a walk;
//   - ${board.path:default} gives a default for a missing value; a default
//     that is a JSON literal (42, true, null, "x", [1], {"a":1}) keeps its
//     type, any other default is a string;
//   - when s is a single reference and nothing else, the value keeps its
//     type; otherwise every reference is formatted into the string (strings
//     as they are, other values as JSON);
//   - \${...} is the literal text ${...};
//   - a missing value without a default is a Validation error.
func Resolve(vars map[string]any, s string) (any, error) {
	refs, err := scanRefs(s)
	if err != nil {
		return nil, err
	}
	if len(refs) == 1 && !refs[0].escaped && refs[0].start == 0 && refs[0].end == len(s) {
		return refs[0].value(vars)
	}
	out, err := resolveInto(vars, s, refs)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ResolveString is Resolve that always returns a string: a lone reference
// to a non-string value is formatted as JSON.
func ResolveString(vars map[string]any, s string) (string, error) {
	refs, err := scanRefs(s)
	if err != nil {
		return "", err
	}
	return resolveInto(vars, s, refs)
}

type boardRef struct {
	start, end int // the reference's bytes in s, "${" to "}"
	escaped    bool
	path       string
	def        string
	hasDef     bool
}

const refOpen = "${board."

func scanRefs(s string) ([]boardRef, error) {
	var refs []boardRef
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "${")
		if j < 0 {
			break
		}
		j += i
		escaped := j > 0 && s[j-1] == '\\'
		end := matchBrace(s, j+1)
		if end < 0 {
			return nil, fault.New(fault.Validation, "resolve", "unclosed ${ at byte %d", j)
		}
		body := s[j+2 : end]
		if escaped {
			refs = append(refs, boardRef{start: j - 1, end: end + 1, escaped: true})
			i = end + 1
			continue
		}
		if !strings.HasPrefix(s[j:], refOpen) {
			i = end + 1
			continue
		}
		ref := boardRef{start: j, end: end + 1, path: strings.TrimPrefix(body, "board.")}
		if k := strings.IndexByte(ref.path, ':'); k >= 0 {
			ref.path, ref.def, ref.hasDef = ref.path[:k], ref.path[k+1:], true
		}
		if ref.path == "" {
			return nil, fault.New(fault.Validation, "resolve", "empty board path at byte %d", j)
		}
		refs = append(refs, ref)
		i = end + 1
	}
	return refs, nil
}

// matchBrace returns the index of the '}' closing the '{' at open, or -1.
func matchBrace(s string, open int) int {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func resolveInto(vars map[string]any, s string, refs []boardRef) (string, error) {
	var b strings.Builder
	last := 0
	for _, r := range refs {
		b.WriteString(s[last:r.start])
		last = r.end
		if r.escaped {
			b.WriteString(s[r.start+1 : r.end])
			continue
		}
		v, err := r.value(vars)
		if err != nil {
			return "", err
		}
		str, err := formatValue(v)
		if err != nil {
			return "", err
		}
		b.WriteString(str)
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

func (r boardRef) value(vars map[string]any) (any, error) {
	if r.escaped {
		return nil, nil
	}
	if v, ok := lookupPath(vars, r.path); ok {
		return v, nil
	}
	if !r.hasDef {
		return nil, fault.New(fault.Validation, "resolve", "board var %q is not set and has no default", r.path)
	}
	var v any
	if err := json.Unmarshal([]byte(r.def), &v); err == nil {
		return v, nil
	}
	return r.def, nil
}

func formatValue(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", fault.Wrap(fault.Validation, err, "resolve", "format a %T", v)
	}
	return string(b), nil
}

// lookupPath finds path in vars: the longest var name that is a dotted
// prefix of path (the whole path first), then a walk of the rest.
func lookupPath(vars map[string]any, path string) (any, bool) {
	segs := strings.Split(path, ".")
	for n := len(segs); n > 0; n-- {
		v, ok := vars[strings.Join(segs[:n], ".")]
		if !ok {
			continue
		}
		if got, ok := walk(v, segs[n:]); ok {
			return got, true
		}
	}
	return nil, false
}

func walk(v any, segs []string) (any, bool) {
	for i, seg := range segs {
		switch t := v.(type) {
		case map[string]any:
			next, ok := t[seg]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(t) {
				return nil, false
			}
			v = t[n]
		case map[string]string:
			next, ok := t[seg]
			if !ok {
				return nil, false
			}
			v = next
		case nil, string, bool, float64, json.Number, int, int64:
			return nil, false
		default:
			generic, ok := asJSONValue(t)
			if !ok {
				return nil, false
			}
			return walk(generic, segs[i:])
		}
	}
	return v, true
}

// asJSONValue turns a Go value (a struct, a typed map or slice) into its
// JSON shape, so that exported fields are walked by their JSON names.
func asJSONValue(v any) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil, false
	}
	switch out.(type) {
	case map[string]any, []any:
		return out, true
	}
	return nil, false
}
