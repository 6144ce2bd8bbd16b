package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
)

// MaxSchemaDepth bounds how deeply schemas nest (properties, items,
// additionalProperties).
const MaxSchemaDepth = 32

// The JSON types a schema's type keyword may name.
var schemaTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// annotations are the keywords a schema may carry that validate nothing.
// format is an annotation too, as JSON Schema 2020-12 has it by default.
var annotations = []string{"$comment", "$schema", "default", "deprecated", "description", "examples", "format",
	"readOnly", "title", "writeOnly"}

// Schema is a compiled argument schema: the subset of JSON Schema that
// tool arguments are checked against before a call (docs/tools.md). The
// keywords it applies are type (a name or a list of names), properties,
// required, additionalProperties (false or a schema), items (a schema)
// and enum; annotations (title, description, default, examples, format,
// $schema, $comment, deprecated, readOnly, writeOnly) are accepted and not
// checked. Any other keyword is refused when the schema is compiled, so a
// document never believes a rule is checked when it is not. A Schema is
// immutable and safe for concurrent use.
type Schema struct {
	types      []string           // empty: any type
	properties map[string]*Schema // checked for the properties an object has
	required   []string
	additional *Schema // nil: any additional property; see noAdditional
	noAdd      bool    // additionalProperties: false
	items      *Schema
	enum       []any // nil: no enum; values decoded with UseNumber
}

// CompileSchema compiles a JSON schema. Errors are Validation and name
// the keyword's path ("properties.city.type").
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, "compile schema", "")
	}
	return compileNode(v, "", 0)
}

func compileNode(v any, path string, depth int) (*Schema, error) {
	bad := func(format string, args ...any) error {
		return fault.New(fault.Validation, "compile schema", "%s"+format, append([]any{at(path)}, args...)...)
	}
	if depth > MaxSchemaDepth {
		return nil, bad("nested deeper than %d", MaxSchemaDepth)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, bad("a schema must be an object, got %s", typeOf(v))
	}
	s := &Schema{}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if err := s.keyword(k, obj[k], join(path, k), depth); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// keyword compiles one keyword of a schema object.
func (s *Schema) keyword(k string, v any, path string, depth int) error {
	bad := func(format string, args ...any) error {
		return fault.New(fault.Validation, "compile schema", "%s"+format, append([]any{at(path)}, args...)...)
	}
	var err error
	switch k {
	case "type":
		s.types, err = compileTypes(v)
	case "properties":
		s.properties, err = compileProperties(v, path, depth)
	case "required":
		s.required, err = compileRequired(v)
	case "additionalProperties":
		if b, ok := v.(bool); ok {
			s.noAdd = !b
			return nil
		}
		s.additional, err = compileNode(v, path, depth+1)
		return err
	case "items":
		s.items, err = compileNode(v, path, depth+1)
		return err
	case "enum":
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return bad("want a non-empty array")
		}
		s.enum = list
	default:
		if !slices.Contains(annotations, k) {
			return bad("keyword %q is not supported (supported: type, properties, required, additionalProperties, items, enum, and annotations)", k)
		}
	}
	if err != nil {
		return bad("%v", err)
	}
	return nil
}

func compileTypes(v any) ([]string, error) {
	var names []any
	switch t := v.(type) {
	case string:
		names = []any{t}
	case []any:
		if len(t) == 0 {
			return nil, fmt.Errorf("want a type name or a non-empty list of them")
		}
		names = t
	default:
		return nil, fmt.Errorf("want a type name or a list of them, got %s", typeOf(v))
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		name, ok := n.(string)
		if !ok || !slices.Contains(schemaTypes, name) {
			return nil, fmt.Errorf("%s is not one of %s", abbreviate(fmt.Sprint(n)), strings.Join(schemaTypes, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

func compileProperties(v any, path string, depth int) (map[string]*Schema, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want an object of schemas, got %s", typeOf(v))
	}
	out := make(map[string]*Schema, len(obj))
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		s, err := compileNode(obj[name], join(path, name), depth+1)
		if err != nil {
			return nil, err
		}
		out[name] = s
	}
	return out, nil
}

func compileRequired(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array of property names, got %s", typeOf(v))
	}
	out := make([]string, 0, len(list))
	for _, n := range list {
		name, ok := n.(string)
		if !ok {
			return nil, fmt.Errorf("want property names, got %s", typeOf(n))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// decodeJSON decodes one JSON value with numbers kept as json.Number;
// trailing data is an error.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("empty input")
		}
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the value")
	}
	return v, nil
}

// join appends a property name to a dotted path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// at renders a path as a message prefix.
func at(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

func abbreviate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
