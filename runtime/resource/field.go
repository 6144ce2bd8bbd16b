package resource

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
	"gopkg.in/yaml.v3"
)

// FieldError is a settings value (or a value of a document inside
// settings, such as a graph) that is wrong at one place. Path names the
// place relative to the settings the factory received ("replies[0].text",
// "graph.nodes[2].config.max_tokens"), unless File is set: then the value
// is in File, a document the factory loaded from a reference, Path is
// relative to that document and Line is the line of Path in it (0 when
// unknown). The deployment layer turns a FieldError into a document error
// at the value's own file, line and path.
type FieldError struct {
	File string
	Line int
	Path string
	// Key is set for an unknown key of the mapping at Path: the key, whose
	// own line is where the error is.
	Key string
	// Within is set when the value at Path is a multi-line string, such as
	// a script, and the error is at one of its lines: that line, from 1.
	Within int
	Msg    string
	Kind   *fault.Kind // nil means Validation
}

// At returns the path of the place to show: Path, or the key under it.
func (e *FieldError) At() string {
	if e.Key == "" {
		return e.Path
	}
	return JoinPath(e.Path, e.Key)
}

// Error formats as "file:line: path: msg", leaving out unknown parts.
func (e *FieldError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the kind.
func (e *FieldError) Unwrap() error {
	if e.Kind == nil {
		return fault.Validation
	}
	return e.Kind
}

// Under returns e with prefix put before its path, for settings that sit
// inside others; an error placed in its own File is returned unchanged.
func (e *FieldError) Under(prefix string) *FieldError {
	if e.File != "" || prefix == "" {
		return e
	}
	out := *e
	out.Path = JoinPath(prefix, e.Path)
	return &out
}

// JoinPath joins two document paths: JoinPath("graph", "nodes[2]") is
// "graph.nodes[2]", JoinPath("nodes", "[2]") is "nodes[2]".
func JoinPath(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	}
	return prefix + "." + path
}

// DecodeStrict decodes the JSON value data into out the way DecodeSettings
// does; a value that does not fit is a *FieldError naming its path and
// saying what was wanted and what was written ("replies[0].chunks: want
// an integer, got \"ten\""), in the document's terms rather than Go's.
// Empty data and null decode as {}.
func DecodeStrict(data []byte, out any) error {
	if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(out)
	if err == nil {
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return &FieldError{Msg: "trailing data after the value"}
		}
		return nil
	}
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		return &FieldError{Msg: "not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &FieldError{Msg: "not valid JSON: unexpected end of input"}
	}
	if fe := findField(data, reflect.TypeOf(out), ""); fe != nil {
		return fe
	}
	// A custom decoder's own error, found by no walk: keep its text.
	msg := strings.TrimPrefix(err.Error(), "json: ")
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &FieldError{Path: te.Field, Msg: "want " + describeType(te.Type) + ", got " + article(te.Value)}
	}
	return &FieldError{Msg: msg, Kind: fault.KindOf(err)}
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// findField walks raw along t, in document order, to the first value
// encoding/json refuses: an unknown key of a struct, or a value that does
// not decode into its type. It returns nil when it finds none.
func findField(raw json.RawMessage, t reflect.Type, path string) *FieldError {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNullJSON(raw) {
		return nil
	}
	custom := reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)
	switch {
	case custom || t.Kind() == reflect.Interface:
	case t.Kind() == reflect.Struct:
		return findInStruct(raw, t, path)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		keys, vals, ok := objectEntries(raw)
		if !ok {
			break
		}
		for i, k := range keys {
			if fe := findField(vals[i], t.Elem(), JoinPath(path, k)); fe != nil {
				return fe
			}
		}
		return nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8, t.Kind() == reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			break
		}
		for i, item := range items {
			if fe := findField(item, t.Elem(), path+"["+strconv.Itoa(i)+"]"); fe != nil {
				return fe
			}
		}
		return nil
	}
	if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
		msg := "want " + describeType(t) + ", got " + describeJSON(raw)
		var te *json.UnmarshalTypeError
		if custom && !errors.As(err, &te) {
			msg = strings.TrimPrefix(err.Error(), "json: ")
		}
		return &FieldError{Path: path, Msg: msg, Kind: fault.KindOf(err)}
	}
	return nil
}

func findInStruct(raw json.RawMessage, t reflect.Type, path string) *FieldError {
	keys, vals, ok := objectEntries(raw)
	if !ok {
		return &FieldError{Path: path, Msg: "want an object, got " + describeJSON(raw)}
	}
	fields := jsonFields(t)
	for i, k := range keys {
		f, ok := fields[k]
		if !ok {
			for name, g := range fields {
				if strings.EqualFold(name, k) {
					f, ok = g, true
					break
				}
			}
		}
		if !ok {
			return &FieldError{Path: path, Key: k, Msg: "unknown field " + strconv.Quote(k) + knownList(fields)}
		}
		if fe := findField(vals[i], f.Type, JoinPath(path, k)); fe != nil {
			return fe
		}
	}
	return nil
}

// jsonFields maps the JSON names of t's fields (embedded structs promoted)
// to the fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	var promoted []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			promoted = append(promoted, f)
		case f.IsExported():
			if name == "" {
				name = f.Name
			}
			out[name] = f
		}
	}
	for _, p := range promoted {
		for name, f := range jsonFields(p.Type) {
			if _, own := out[name]; !own {
				out[name] = f
			}
		}
	}
	return out
}

func knownList(fields map[string]reflect.StructField) string {
	if len(fields) == 0 || len(fields) > 24 {
		return ""
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	slices.Sort(names)
	return " (known: " + strings.Join(names, ", ") + ")"
}

// objectEntries returns the keys and values of a JSON object in document
// order.
func objectEntries(raw json.RawMessage) (keys []string, vals []json.RawMessage, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, false
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, false
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	return keys, vals, true
}

func isNullJSON(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// describeType says what a Go type wants in the document's terms.
func describeType(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Pointer:
		return describeType(t.Elem())
	}
	return "a value"
}

// describeJSON shows a JSON value in a message: a scalar as written
// (abbreviated), a container by its kind.
func describeJSON(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	switch {
	case len(t) == 0:
		return "nothing"
	case t[0] == '{':
		return "an object"
	case t[0] == '[':
		return "an array"
	}
	return abbreviate(t)
}

// article puts an article before encoding/json's name of a JSON kind.
func article(kind string) string {
	switch kind {
	case "object", "array":
		return "an " + kind
	case "string", "number", "bool":
		return "a " + kind
	}
	return kind
}

// LineOf returns the line at which the YAML (or JSON) document data
// writes path ("nodes[2].config.max_tokens"), or of the nearest part of it
// that is written; 0 when data does not parse. For a mapping entry it is
// the line of the key.
func LineOf(data []byte, path string) int {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return 0
	}
	n := doc.Content[0]
	line := n.Line
	for _, seg := range splitPath(path) {
		next, at := child(n, seg)
		if next == nil {
			break
		}
		n, line = next, at
	}
	return line
}

// LineWithin returns the line of data at which line within (from 1) of
// the string value at path is written — the value's own first line for a
// plain or quoted scalar, the line after its indicator for a block scalar
// (| or >) — or LineOf(data, path) when within is 0 or the path does not
// lead to a scalar.
func LineWithin(data []byte, path string, within int) int {
	var doc yaml.Node
	if within <= 0 || yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return LineOf(data, path)
	}
	n := doc.Content[0]
	for _, seg := range splitPath(path) {
		if n, _ = child(n, seg); n == nil {
			return LineOf(data, path)
		}
	}
	switch {
	case n.Kind != yaml.ScalarNode:
		return LineOf(data, path)
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return n.Line + within
	}
	return n.Line + within - 1
}

// child returns the node seg names in n and the line that writes it.
func child(n *yaml.Node, seg string) (*yaml.Node, int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i+1], n.Content[i].Line
			}
		}
	case yaml.SequenceNode:
		if strings.HasPrefix(seg, "[") {
			i, err := strconv.Atoi(strings.Trim(seg, "[]"))
			if err == nil && i >= 0 && i < len(n.Content) {
				return n.Content[i], n.Content[i].Line
			}
		}
	}
	return nil, 0
}

// splitPath splits "nodes[2].config.k" into "nodes", "[2]", "config", "k".
func splitPath(path string) []string {
	var out []string
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			i := strings.IndexByte(part[1:], '[')
			if i < 0 {
				out = append(out, part)
				break
			}
			out = append(out, part[:i+1])
			part = part[i+1:]
		}
	}
	return out
}
