package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxSchemaDepth bounds how deeply schemas nest (a subschema of a
// subschema of …: properties, items, anyOf, $defs and the like).
const MaxSchemaDepth = 32

// schemaURL is the location a schema is compiled at. It names no place a
// loader could reach: every reference to another document is refused.
const schemaURL = "corral:///arguments.json"

// Schema is a compiled argument schema: JSON Schema, draft 2020-12 (or the
// draft its $schema names, among those the validator embeds), as tool
// definitions copied from OpenAI or MCP use it: type, properties, required,
// additionalProperties, items, enum, const, minimum and maximum, pattern,
// minLength, anyOf, oneOf, allOf, $ref to $defs, and the rest of the
// standard. format is an annotation, as 2020-12 has it by default. A $ref
// to another document is refused when the schema is compiled: nothing is
// loaded from the network or the file system. A Schema is immutable and
// safe for concurrent use.
type Schema struct {
	compiled *jsonschema.Schema
	types    []string // the top-level type keyword, as written
}

// refuseLoader is the compiler's loader: it loads nothing, so a $ref to
// another document (http, https, file or relative) fails the compile.
type refuseLoader struct{}

var errRemoteRef = errors.New("references to other documents are not loaded: put the schema under $defs and use \"#/$defs/…\"")

func (refuseLoader) Load(string) (any, error) { return nil, errRemoteRef }

// CompileSchema compiles a JSON schema. Errors are Validation and name
// the place in the schema ("properties.city.type").
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	const op = "compile schema"
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "")
	}
	if path, err := normalizeNumbers(&v, ""); err != nil {
		return nil, fault.New(fault.Validation, op, "%s%v", at(path), err)
	}
	if path, ok := withinDepth(v, "", 0); !ok {
		return nil, fault.New(fault.Validation, op, "%snested deeper than %d", at(path), MaxSchemaDepth)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fault.New(fault.Validation, op, "a schema must be an object, got %s", typeOf(v))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, v); err != nil {
		return nil, fault.Wrap(fault.Validation, err, op, "")
	}
	compiled, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fault.New(fault.Validation, op, "%s", compileProblem(err))
	}
	return &Schema{compiled: compiled, types: topTypes(v)}, nil
}

// topTypes returns the type keyword of a schema object as a list.
func topTypes(v any) []string {
	obj, _ := v.(map[string]any)
	switch t := obj["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, n := range t {
			if s, ok := n.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// compileProblem describes a compile error with its place in the schema
// and without the compiler's internal location.
func compileProblem(err error) string {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			problems := leafProblems(ve, nil)
			return "not a valid schema: " + strings.Join(problems, "; ")
		}
	}
	var lue *jsonschema.LoadURLError
	if errors.As(err, &lue) {
		return fmt.Sprintf("reference %q ($ref or $schema): %v", strings.TrimPrefix(lue.URL, "corral:///"), lue.Err)
	}
	var rx *jsonschema.InvalidRegexError
	if errors.As(err, &rx) {
		return fmt.Sprintf("%spattern %q is not a regular expression the validator supports (Go's RE2 syntax): %v",
			at(pointerPath(rx.URL)), rx.Regex, rx.Err)
	}
	return strings.ReplaceAll(err.Error(), schemaURL, "")
}

// pointerPath turns a schema location ("corral:///arguments.json#/properties/a")
// into a dotted path ("properties.a").
func pointerPath(loc string) string {
	_, frag, _ := strings.Cut(loc, "#")
	frag = strings.Trim(frag, "/")
	if frag == "" {
		return ""
	}
	parts := strings.Split(frag, "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return strings.Join(parts, ".")
}

// Keywords whose value is a schema, an array of schemas or a map of them:
// withinDepth counts one level for each.
var (
	schemaKeywords = []string{"additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if",
		"items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	schemaListKeywords = []string{"allOf", "anyOf", "items", "oneOf", "prefixItems"}
	schemaMapKeywords  = []string{"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"}
)

// withinDepth reports whether schemas nest at most MaxSchemaDepth deep in
// v, and where they first nest deeper.
func withinDepth(v any, path string, depth int) (string, bool) {
	if depth > MaxSchemaDepth {
		return path, false
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", true
	}
	for k, sub := range obj {
		p := join(path, k)
		switch {
		case contains(schemaMapKeywords, k):
			m, _ := sub.(map[string]any)
			for name, s := range m {
				if at, ok := withinDepth(s, join(p, name), depth+1); !ok {
					return at, false
				}
			}
		case contains(schemaListKeywords, k) && isList(sub):
			for i, s := range sub.([]any) {
				if at, ok := withinDepth(s, fmt.Sprintf("%s[%d]", p, i), depth+1); !ok {
					return at, false
				}
			}
		case contains(schemaKeywords, k):
			if at, ok := withinDepth(sub, p, depth+1); !ok {
				return at, false
			}
		}
	}
	return "", true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isList(v any) bool { _, ok := v.([]any); return ok }

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
