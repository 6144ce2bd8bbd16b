package deploy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
	"gopkg.in/yaml.v3"
)

// maxDepth bounds the nesting of a document.
const maxDepth = 256

// docFields is the top level of a document as written.
type docFields struct {
	Version   string                      `json:"version"`
	Resources map[string]ResourceEntry    `json:"resources"`
	Agents    map[string]agent.Definition `json:"agents"`
	Runtime   json.RawMessage             `json:"runtime"`
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	definitionType = reflect.TypeFor[agent.Definition]()
	durationType   = reflect.TypeFor[time.Duration]()
)

// decoder fills Go values from a YAML node tree strictly, the way
// encoding/json with DisallowUnknownFields would from JSON (fields are
// matched by their json tag; the fields of an embedded struct are
// promoted), and records the position of every path. A null leaves the
// value as it is, and a time.Duration is written as a Go duration.
type decoder struct {
	file   string
	files  map[*yaml.Node]string // the file of each node, for layered documents
	index  map[string]Position
	text   map[string]int // the first content line of each multi-line string in settings
	fields map[reflect.Type]map[string][]int
	// section is set when the tree is a section of doc decoded on its own
	// (DecodeSection): nodes are placed by their path in doc, and scalars
	// are read leniently.
	section *section
}

func newDecoder(file string, files map[*yaml.Node]string) *decoder {
	return &decoder{file: file, files: files, index: map[string]Position{}, text: map[string]int{},
		fields: map[reflect.Type]map[string][]int{}}
}

func decodeDocument(root *yaml.Node, file string, files map[*yaml.Node]string) (*Document, error) {
	d := newDecoder(file, files)
	if root == nil || (root.Kind == yaml.ScalarNode && root.Tag == "!!null") {
		return nil, syntaxError(file, 1, "document is empty")
	}
	d.index[""] = d.pos(root)
	if root.Kind != yaml.MappingNode {
		return nil, d.fail(root, "", fault.Validation, "a document must be a mapping, got %s", describe(root))
	}
	var top docFields
	if err := d.decode(root, reflect.ValueOf(&top).Elem(), "", 0); err != nil {
		return nil, err
	}
	return &Document{
		Version:   top.Version,
		Resources: top.Resources,
		Agents:    top.Agents,
		Runtime:   top.Runtime,
		file:      file,
		index:     d.index,
		text:      d.text,
	}, nil
}

func (d *decoder) pos(n *yaml.Node) Position {
	if d.section != nil {
		return d.section.pos(n)
	}
	f := d.file
	if nf, ok := d.files[n]; ok {
		f = nf
	}
	return Position{File: f, Line: n.Line, Column: n.Column}
}

func (d *decoder) fail(n *yaml.Node, path string, kind *fault.Kind, format string, args ...any) *Error {
	return &Error{Pos: d.pos(n), Path: path, Err: fault.New(kind, "", format, args...)}
}

func childPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func itemPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "null"
	}
	return "the scalar " + strconv.Quote(abbreviate(n.Value))
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// decode fills v from n; path names n in errors.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string, depth int) error {
	if depth > maxDepth {
		return d.fail(n, path, fault.Validation, "nesting is deeper than %d levels", maxDepth)
	}
	if n.Kind == yaml.AliasNode {
		return d.fail(n, path, fault.Validation, "aliases are not supported")
	}
	if v.Type() == rawMessageType {
		return d.raw(n, v, path, depth)
	}
	if isNull(n) && v.Kind() != reflect.Interface {
		return nil // the value stays as it is: the zero value, or a default set before
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.structure(n, v, path, depth)
	case reflect.Map:
		return d.mapping(n, v, path, depth)
	case reflect.Slice:
		return d.sequence(n, v, path, depth)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.decode(n, p.Elem(), path, depth+1); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Interface:
		x, err := d.value(n, path, depth)
		if err == nil && x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return err
	}
	return d.scalar(n, v, path)
}

// raw converts the subtree to JSON after checking it and indexing every
// path inside it.
func (d *decoder) raw(n *yaml.Node, v reflect.Value, path string, depth int) error {
	if isNull(n) {
		v.SetZero()
		return nil
	}
	x, err := d.value(n, path, depth)
	if err != nil {
		return err
	}
	data, err := marshalJSON(x)
	if err != nil {
		return d.fail(n, path, fault.Validation, "not valid JSON: %v", err)
	}
	v.SetBytes(data)
	return nil
}

// value checks the subtree for what JSON cannot hold (aliases, merge keys,
// non-string keys, repeated keys, NaN, infinities), indexes its paths and
// converts it with resource.NodeValue.
func (d *decoder) value(n *yaml.Node, path string, depth int) (any, error) {
	if err := d.check(n, path, depth); err != nil {
		return nil, err
	}
	x, err := resource.NodeValue(n)
	if err != nil {
		return nil, d.fail(n, path, fault.Validation, "%v", err)
	}
	return x, nil
}

func (d *decoder) check(n *yaml.Node, path string, depth int) error {
	if depth > maxDepth {
		return d.fail(n, path, fault.Validation, "nesting is deeper than %d levels", maxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return d.fail(n, path, fault.Validation, "aliases are not supported")
	case yaml.MappingNode:
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if err := d.key(k, path, seen, fault.Validation); err != nil {
				return err
			}
			p := childPath(path, k.Value)
			d.index[p] = d.pos(k)
			d.noteText(val, p)
			if err := d.check(val, p, depth+1); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := itemPath(path, i)
			d.index[p] = d.pos(c)
			d.noteText(c, p)
			if err := d.check(c, p, depth+1); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if n.Tag == "!!float" {
			var f float64
			if n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
				return d.fail(n, path, fault.Validation, "%s is not a JSON number", n.Value)
			}
		}
	}
	return nil
}

// noteText records where the content of a multi-line string starts (a
// script written inline), so that an error at one of its lines can name
// the document's line: the line after the indicator of a block scalar (|
// or >), the scalar's own line otherwise.
func (d *decoder) noteText(n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode || !strings.Contains(n.Value, "\n") || d.section != nil {
		return
	}
	line := n.Line
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		line++
	}
	d.text[path] = line
}

// key checks a mapping key: a plain string scalar, not a merge key, not
// seen before in the same mapping.
func (d *decoder) key(k *yaml.Node, path string, seen map[string]bool, dupKind *fault.Kind) error {
	if k.Tag == "!!merge" {
		return d.fail(k, path, fault.Validation, "merge keys are not supported")
	}
	if k.Kind != yaml.ScalarNode || k.Tag == "!!null" || (k.Tag != "!!str" && k.Tag != "!!int" && k.Tag != "!!bool" && k.Tag != "!!float") {
		return d.fail(k, path, fault.Validation, "mapping keys must be strings, got %s", describe(k))
	}
	if seen[k.Value] {
		if dupKind == fault.Conflict {
			return d.fail(k, childPath(path, k.Value), dupKind, "%q is declared twice", k.Value)
		}
		return d.fail(k, childPath(path, k.Value), dupKind, "key %q is repeated", k.Value)
	}
	seen[k.Value] = true
	return nil
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string, depth int) error {
	if n.Kind != yaml.MappingNode {
		return d.fail(n, path, fault.Validation, "want a mapping, got %s", describe(n))
	}
	fields := d.fieldsOf(v.Type())
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if err := d.key(k, path, seen, fault.Validation); err != nil {
			return err
		}
		fi, ok := fields[k.Value]
		if !ok {
			hint := ""
			if v.Type() == definitionType && k.Value == "deps" {
				hint = " (engine dependencies go under engine.deps)"
			}
			return d.fail(k, path, fault.Validation, "unknown field %q%s", k.Value, hint)
		}
		p := childPath(path, k.Value)
		d.index[p] = d.pos(k)
		if err := d.decode(val, v.FieldByIndex(fi), p, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// fieldsOf maps the json names of t's exported fields to their index
// path. The fields of an embedded struct without a json name are promoted,
// unless t has a field of the same name itself.
func (d *decoder) fieldsOf(t reflect.Type) map[string][]int {
	if m, ok := d.fields[t]; ok {
		return m
	}
	m := map[string][]int{}
	var promoted []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			promoted = append(promoted, f)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		m[cmp.Or(name, f.Name)] = []int{i}
	}
	for _, f := range promoted {
		for name, idx := range d.fieldsOf(f.Type) {
			if _, own := m[name]; !own {
				m[name] = append([]int{f.Index[0]}, idx...)
			}
		}
	}
	d.fields[t] = m
	return m
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string, depth int) error {
	if n.Kind != yaml.MappingNode {
		return d.fail(n, path, fault.Validation, "want a mapping, got %s", describe(n))
	}
	if v.Type().Key().Kind() != reflect.String {
		return d.fail(n, path, fault.Internal, "cannot decode into %s", v.Type())
	}
	dup := fault.Validation
	if path == "resources" || path == "agents" {
		dup = fault.Conflict // a resource or agent declared twice
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if err := d.key(k, path, seen, dup); err != nil {
			return err
		}
		p := childPath(path, k.Value)
		d.index[p] = d.pos(k)
		e := reflect.New(v.Type().Elem()).Elem()
		if err := d.decode(val, e, p, depth+1); err != nil {
			return err
		}
		m.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
	}
	v.Set(m)
	return nil
}

func (d *decoder) sequence(n *yaml.Node, v reflect.Value, path string, depth int) error {
	if n.Kind != yaml.SequenceNode {
		return d.fail(n, path, fault.Validation, "want a sequence, got %s", describe(n))
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, c := range n.Content {
		p := itemPath(path, i)
		d.index[p] = d.pos(c)
		if err := d.decode(c, s.Index(i), p, depth+1); err != nil {
			return err
		}
	}
	v.Set(s)
	return nil
}

func (d *decoder) scalar(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.ScalarNode {
		return d.fail(n, path, fault.Validation, "want a scalar, got %s", describe(n))
	}
	if v.Type() == durationType {
		dur, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			return d.fail(n, path, fault.Validation, "want a Go duration such as 90s or 10m, got %s", describe(n))
		}
		v.SetInt(int64(dur))
		return nil
	}
	if d.section != nil && v.Kind() != reflect.String {
		return d.lenient(n, v, path)
	}
	var want string
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want = "an integer"
		if i, err := strconv.ParseInt(resolved(n, "!!int"), 0, v.Type().Bits()); err == nil {
			v.SetInt(i)
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a non-negative integer"
		if u, err := strconv.ParseUint(resolved(n, "!!int"), 0, v.Type().Bits()); err == nil {
			v.SetUint(u)
			return nil
		}
	case reflect.Bool:
		want = "true or false"
		if b, err := strconv.ParseBool(resolved(n, "!!bool")); err == nil {
			v.SetBool(b)
			return nil
		}
	case reflect.Float32, reflect.Float64:
		want = "a number"
		var f float64
		if (n.Tag == "!!int" || n.Tag == "!!float") && n.Decode(&f) == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			v.SetFloat(f)
			return nil
		}
	default:
		return d.fail(n, path, fault.Internal, "cannot decode into %s", v.Type())
	}
	return d.fail(n, path, fault.Validation, "want %s, got %s", want, describe(n))
}

// resolved returns the canonical text of a scalar that carries tag, or ""
// (which no strconv parser accepts) when it carries another.
func resolved(n *yaml.Node, tag string) string {
	if n.Tag != tag {
		return ""
	}
	var x any
	if n.Decode(&x) != nil {
		return ""
	}
	switch t := x.(type) {
	case int, int64, uint64, bool:
		return fmt.Sprint(t)
	}
	return ""
}
