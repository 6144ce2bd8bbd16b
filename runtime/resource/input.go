package resource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"gopkg.in/yaml.v3"
)

// Source is a reference to content outside the document: a file relative
// to the document's base directory, or a name in the application's embedded
// file system. Exactly one field is set.
type Source struct {
	File  string `json:"file,omitempty"`
	Embed string `json:"embed,omitempty"`
	// Module marks a reference to a WebAssembly module, which a Loader
	// reads under its own, larger cap. A document never sets it: the
	// factory that reads a module does (Input.ResolveModule).
	Module bool `json:"-"`
}

// String returns "file:path" or "embed:name".
func (s Source) String() string {
	if s.File != "" {
		return "file:" + s.File
	}
	return "embed:" + s.Embed
}

// SourceOf reports whether raw is a reference, that is a JSON object with
// exactly one key, "file" or "embed", whose value is a non-empty string.
// Every other value is inline content.
func SourceOf(raw json.RawMessage) (Source, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return Source{}, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) != 1 {
		return Source{}, false
	}
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) != nil || s == "" {
			return Source{}, false
		}
		switch k {
		case "file":
			return Source{File: s}, true
		case "embed":
			return Source{Embed: s}, true
		}
	}
	return Source{}, false
}

// Loader resolves references and expands scalars for factories. The
// deployment layer provides one rooted at the document's directory.
type Loader interface {
	// Load returns the bytes of src. Files are confined to the base
	// directory (Forbidden otherwise), missing ones are NotFound, and a
	// file that is not regular or content over the size cap (the module
	// cap when src.Module is set) is a Validation error. Load never
	// blocks on a named pipe or a device.
	Load(ctx context.Context, src Source) ([]byte, error)
	// Expand expands ${env:NAME}, ${base}, ${base:rel}, ${home},
	// ${home:rel}, ~ and ~/rel in s. An unset variable, a malformed ${ or an
	// unknown kind is a Validation error.
	Expand(s string) (string, error)
}

// Input is what a factory receives.
type Input struct {
	// Name is the resource's name in the document (the agent id for
	// engines and hooks).
	Name string
	// Settings is the resource's settings as JSON. References in the
	// whole subtree are already resolved; nested references are the
	// factory's to resolve with Resolve.
	Settings json.RawMessage
	// Deps maps each document dep key to its built value.
	Deps map[string]any
	// Loader resolves references; it may be nil for values built outside
	// a document.
	Loader Loader
}

// Dep returns the value bound to role.
func (in Input) Dep(role string) (any, bool) {
	v, ok := in.Deps[role]
	return v, ok
}

// NamedDep is one binding of a Many dependency.
type NamedDep struct {
	Key   string // the document key, "name" or "name.<suffix>"
	Value any
}

// Suffix returns the part of the key after "name.", or "" for the bare
// name.
func (d NamedDep) Suffix() string {
	if i := strings.IndexByte(d.Key, '.'); i >= 0 {
		return d.Key[i+1:]
	}
	return ""
}

// DepsMany returns the bindings of the Many dependency role ("role" and
// every "role.<suffix>") sorted by key.
func (in Input) DepsMany(role string) []NamedDep {
	var out []NamedDep
	for k, v := range in.Deps {
		if k == role || strings.HasPrefix(k, role+".") {
			out = append(out, NamedDep{Key: k, Value: v})
		}
	}
	slices.SortFunc(out, func(a, b NamedDep) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// Resolve loads the content of a reference with the input's loader.
func (in Input) Resolve(ctx context.Context, src Source) ([]byte, error) {
	if in.Loader == nil {
		return nil, fault.New(fault.NotAvailable, "resolve "+src.String(), "no loader: the value was not built from a document")
	}
	return in.Loader.Load(ctx, src)
}

// ResolveModule loads the WebAssembly module that raw refers to, under the
// loader's module cap. raw must be a {file}/{embed} reference.
func (in Input) ResolveModule(ctx context.Context, raw json.RawMessage) ([]byte, error) {
	src, ok := SourceOf(raw)
	if !ok {
		return nil, fault.New(fault.Validation, "resolve module", "want {file: path} or {embed: name}, got %s", abbreviate(raw))
	}
	src.Module = true
	return in.Resolve(ctx, src)
}

// ResolveSettings returns the input's settings as JSON, loading them first
// when the whole value is a {file}/{embed} reference (YAML is converted to
// JSON). Deploy resolves such a reference before New, so this matters for
// values built outside a document; references nested deeper are left to
// ResolveText and ResolveDocument.
func (in Input) ResolveSettings(ctx context.Context) (json.RawMessage, error) {
	return in.ResolveDocument(ctx, in.Settings)
}

// ResolveText turns a settings value that is a JSON string or a reference
// into text: the string itself, or the referenced content.
func (in Input) ResolveText(ctx context.Context, raw json.RawMessage) (string, error) {
	if src, ok := SourceOf(raw); ok {
		b, err := in.Resolve(ctx, src)
		return string(b), err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fault.New(fault.Validation, "resolve text", "want a string or {file}/{embed}, got %s", abbreviate(raw))
	}
	return s, nil
}

// ResolveDocument turns a settings value that is an inline object or a
// reference to a YAML or JSON file into JSON.
func (in Input) ResolveDocument(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if src, ok := SourceOf(raw); ok {
		b, err := in.Resolve(ctx, src)
		if err != nil {
			return nil, err
		}
		out, err := YAMLToJSON(b)
		if err != nil {
			return nil, fault.Wrap(fault.Validation, err, "resolve "+src.String(), "")
		}
		return out, nil
	}
	return raw, nil
}

// ExpandSettings returns in.Settings with every string scalar expanded by
// the loader (${env:NAME} and the rest). Factories opt in by calling it.
func (in Input) ExpandSettings() (json.RawMessage, error) {
	if in.Loader == nil || len(in.Settings) == 0 {
		return in.Settings, nil
	}
	return ExpandJSON(in.Settings, in.Loader.Expand)
}

// ExpandJSON applies expand to every string scalar (not to keys) of the
// JSON value raw.
func ExpandJSON(raw json.RawMessage, expand func(string) (string, error)) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "expand settings", "")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fault.New(fault.Validation, "expand settings", "trailing data after the value")
	}
	v, err := expandValue(v, expand)
	if err != nil {
		return nil, err
	}
	return marshalJSON(v)
}

func expandValue(v any, expand func(string) (string, error)) (any, error) {
	switch t := v.(type) {
	case string:
		return expand(t)
	case map[string]any:
		// Keys in order, so that of several bad strings the same one is
		// reported every time.
		for _, k := range slices.Sorted(maps.Keys(t)) {
			x, err := expandValue(t[k], expand)
			if err != nil {
				return nil, err
			}
			t[k] = x
		}
	case []any:
		for i, e := range t {
			x, err := expandValue(e, expand)
			if err != nil {
				return nil, err
			}
			t[i] = x
		}
	}
	return v, nil
}

// YAMLToJSON converts one YAML (or JSON) document to JSON. Mapping keys must
// be strings; aliases, merge keys, NaN and infinities are refused, and so is
// a second document. Every error is a Validation error naming the line.
// Empty input converts to null.
func YAMLToJSON(data []byte) (json.RawMessage, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var n yaml.Node
	if err := dec.Decode(&n); err != nil {
		if errors.Is(err, io.EOF) {
			return json.RawMessage("null"), nil
		}
		return nil, fault.New(fault.Validation, "", "%v", err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		return nil, fault.New(fault.Validation, "yaml", "line %d: a second document is not allowed", max(next.Line, 1))
	}
	v, err := NodeValue(&n)
	if err != nil {
		return nil, err
	}
	return marshalJSON(v)
}

// marshalJSON encodes v compactly without escaping <, > and &, so that
// script sources stay readable.
func marshalJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "encode json", "")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// NodeValue converts a YAML node to plain Go values (map[string]any, []any,
// string, bool, int64, float64, nil) suitable for JSON encoding. A
// non-string key or an alias cycle is an error naming the line.
func NodeValue(n *yaml.Node) (any, error) {
	return nodeValue(n, 0)
}

func nodeValue(n *yaml.Node, depth int) (any, error) {
	if depth > 256 {
		return nil, fault.New(fault.Validation, "yaml", "line %d: nesting is deeper than 256 levels", n.Line)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0], depth+1)
	case yaml.AliasNode:
		return nil, fault.New(fault.Validation, "yaml", "line %d: aliases are not supported", n.Line)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				return nil, fault.New(fault.Validation, "yaml", "line %d: merge keys are not supported", k.Line)
			}
			if k.Kind != yaml.ScalarNode || (k.Tag != "!!str" && k.Tag != "!!int" && k.Tag != "!!bool" && k.Tag != "!!float") {
				return nil, fault.New(fault.Validation, "yaml", "line %d: mapping keys must be strings", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fault.New(fault.Validation, "yaml", "line %d: key %q is repeated", k.Line, k.Value)
			}
			x, err := nodeValue(v, depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = x
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			x, err := nodeValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			s = append(s, x)
		}
		return s, nil
	case yaml.ScalarNode:
		return scalarValue(n)
	}
	return nil, fault.New(fault.Validation, "yaml", "line %d: unsupported node", n.Line)
}

// scalarValue resolves a scalar the way YAML does and keeps what JSON can
// hold: NaN and infinities are refused, timestamps and other tags keep
// their source text.
func scalarValue(n *yaml.Node) (any, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "yaml", "line %d", n.Line)
	}
	switch t := v.(type) {
	case int:
		return int64(t), nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fault.New(fault.Validation, "yaml", "line %d: %s is not a JSON number", n.Line, n.Value)
		}
		return t, nil
	case uint64, int64, bool, string, nil:
		return t, nil
	}
	return n.Value, nil
}

func abbreviate(raw json.RawMessage) string {
	s := string(raw)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
