package tools_test

import (
	"testing"
	"time"

	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/fault"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The compiler accepts JSON Schema 2020-12 and refuses a schema that is
// not one, naming the keyword's place; format and the other annotations
// are accepted and not checked.
func TestCompileSchema(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, schema, err string
	}{
		{"object", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, ""},
		{"annotations", `{"type":"object","title":"t","description":"d","$schema":"https://json-schema.org/draft/2020-12/schema","format":"f","default":{},"examples":[1]}`, ""},
		{"type list", `{"type":["string","null"]}`, ""},
		{"additional schema", `{"type":"object","additionalProperties":{"type":"integer"}}`, ""},
		{"items", `{"type":"array","items":{"enum":[1,"a",null]}}`, ""},
		{"empty schema", `{}`, ""},
		{"boolean subschema", `{"properties":{"a":true,"b":false}}`, ""},
		{"string keywords", `{"type":"string","minLength":3,"maxLength":9,"pattern":"^[a-z]+$"}`, ""},
		{"number keywords", `{"type":"number","minimum":0,"exclusiveMaximum":100,"multipleOf":0.5}`, ""},
		{"combinators", `{"anyOf":[{"type":"string"},{"type":"null"}],"oneOf":[{"const":1},{"const":"1"}],"allOf":[{}],"not":{"type":"boolean"}}`, ""},
		{"local ref", `{"$defs":{"p":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/p"}}}`, ""},
		{"draft-07 definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"p":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/p"}}}`, ""},
		{"unknown type", `{"type":"text"}`, `type: value must be one of`},
		{"empty type list", `{"type":[]}`, "type: minItems"},
		{"type not a string", `{"type":3}`, "type: "},
		{"properties not an object", `{"properties":[]}`, "properties: want object, got array"},
		{"nested bad keyword", `{"type":"object","properties":{"a":{"minimum":"x"}}}`, "properties.a.minimum: want number, got string"},
		{"required not names", `{"required":[1]}`, "required.0: want string"},
		{"items not a schema", `{"items":"x"}`, "items: want boolean or object, got string"},
		{"bad pattern", `{"properties":{"a":{"pattern":"(?<=a)b"}}}`, "properties.a.pattern: '(?<=a)b' is not valid regex"},
		{"missing local ref", `{"$ref":"#/$defs/missing"}`, `"#/$defs/missing" not found`},
		{"not an object", `[]`, "a schema must be an object, got array"},
		{"number out of range", `{"enum":[1e999999999]}`, "enum[0]: number 1e999999999 is out of range"},
		{"not JSON", `{`, "compile schema"},
		{"trailing data", `{} {}`, "trailing data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tools.CompileSchema([]byte(tc.schema))
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tc.err)
			assert.NotContains(t, err.Error(), "corral:///", "the compiler's internal location stays out of messages")
		})
	}
}

// A reference to another document is refused when the schema compiles,
// whatever its scheme: nothing is fetched over the network or read from
// the file system (the loader refuses every load).
func TestCompileSchemaRefusesRemoteRefs(t *testing.T) {
	t.Parallel()
	for _, ref := range []string{
		"https://example.com/schemas/address.json", "http://127.0.0.1:1/s.json", "file:///etc/passwd",
		"other.json", "../secret.json", "https://json-schema.org/draft/2019-09/schema-unknown",
	} {
		for _, schema := range []string{
			`{"$ref":"` + ref + `"}`,
			`{"type":"object","properties":{"a":{"$ref":"` + ref + `"}}}`,
			`{"$schema":"` + ref + `"}`,
		} {
			_, err := tools.CompileSchema([]byte(schema))
			require.Error(t, err, schema)
			assert.ErrorIs(t, err, fault.Validation, schema)
			assert.Contains(t, err.Error(), "references to other documents are not loaded", schema)
		}
	}
}

// A schema nested deeper than MaxSchemaDepth is refused, not recursed into
// without bound.
func TestCompileSchemaDepth(t *testing.T) {
	t.Parallel()
	deep := `{"type":"string"}`
	for range tools.MaxSchemaDepth + 1 {
		deep = `{"type":"array","items":` + deep + `}`
	}
	_, err := tools.CompileSchema([]byte(deep))
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "nested deeper than")
}

// The validator applies type, required, properties, additionalProperties,
// items and enum, and reports every problem with its place.
func TestSchemaValidate(t *testing.T) {
	t.Parallel()
	const schema = `{
	  "type": "object",
	  "properties": {
	    "city":  {"type": "string"},
	    "days":  {"type": "integer"},
	    "temp":  {"type": "number"},
	    "unit":  {"enum": ["c", "f"]},
	    "tags":  {"type": "array", "items": {"type": "string"}},
	    "when":  {"type": ["string", "null"]},
	    "opts":  {"type": "object", "properties": {"deep": {"type": "boolean"}}, "additionalProperties": false},
	    "extra": {"type": "object", "additionalProperties": {"type": "integer"}},
	    "exact": {"enum": [1, {"a": [true]}]}
	  },
	  "required": ["city"]
	}`
	s, err := tools.CompileSchema([]byte(schema))
	require.NoError(t, err)
	cases := []struct {
		name, args string
		problems   []string // substrings of the error; none: valid
	}{
		{"minimal", `{"city":"Oslo"}`, nil},
		{"every field", `{"city":"Oslo","days":3,"temp":-1.5,"unit":"c","tags":["a"],"when":null,"opts":{"deep":true},"extra":{"x":1},"exact":{"a":[true]}}`, nil},
		{"integer written as 2.0", `{"city":"x","days":2.0}`, nil},
		{"enum number by value", `{"city":"x","exact":1.0}`, nil},
		{"unknown property allowed at the top", `{"city":"x","other":1}`, nil},
		{"missing required", `{}`, []string{"$.city: required"}},
		{"wrong type", `{"city":3}`, []string{"$.city: want string, got integer"}},
		{"fraction is not an integer", `{"city":"x","days":1.5}`, []string{"$.days: want integer, got number"}},
		{"string is not a number", `{"city":"x","temp":"1"}`, []string{"$.temp: want number, got string"}},
		{"enum miss", `{"city":"x","unit":"k"}`, []string{"$.unit: not one of the allowed values"}},
		{"enum deep miss", `{"city":"x","exact":{"a":[false]}}`, []string{"$.exact: not one of"}},
		{"item type", `{"city":"x","tags":["a",2]}`, []string{"$.tags[1]: want string, got integer"}},
		{"type list", `{"city":"x","when":3}`, []string{"$.when: want null or string, got integer"}},
		{"no additional", `{"city":"x","opts":{"deep":true,"x":1}}`, []string{"$.opts.x: unknown property"}},
		{"additional schema", `{"city":"x","extra":{"y":"z"}}`, []string{"$.extra.y: want integer, got string"}},
		{"several problems", `{"days":"x","tags":"y"}`, []string{"$.city: required", "$.days: want integer", "$.tags: want array"}},
		{"not an object", `[1]`, []string{"$: want object, got array"}},
		{"not JSON", `{"city":`, []string{"not a JSON value"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := s.Validate([]byte(tc.args))
			if tc.problems == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, fault.Validation)
			for _, p := range tc.problems {
				assert.Contains(t, err.Error(), p)
			}
		})
	}
}

// A value with more problems than a message lists is summarised.
func TestSchemaValidateManyProblems(t *testing.T) {
	t.Parallel()
	s, err := tools.CompileSchema([]byte(`{"type":"array","items":{"type":"string"}}`))
	require.NoError(t, err)
	err = s.Validate([]byte(`[1,2,3,4,5,6,7,8,9,10,11,12]`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "$[0]: want string, got integer; $[1]: want string", "problems in document order")
	assert.Contains(t, err.Error(), "$[7]: want string, got integer; and 4 more")
	assert.NotContains(t, err.Error(), "$[8]")
}

// Huge numbers cost no more than others and still type-check: a long
// integer literal is an integer, and a number written with a huge exponent
// is taken as a float64 (exact arithmetic on it would take seconds), or
// refused beyond float64's range.
func TestSchemaValidateHugeNumbers(t *testing.T) {
	t.Parallel()
	s, err := tools.CompileSchema([]byte(`{"type":"object","properties":{"n":{"type":"integer"},"m":{"type":"number","minimum":0},"e":{"enum":[1e300]}}}`))
	require.NoError(t, err)
	long := `{"n":1` + string(make100Zeros(20)) + `}`
	require.NoError(t, s.Validate([]byte(long)), "a 2001-digit integer literal is an integer")
	require.NoError(t, s.Validate([]byte(`{"n":1e3}`)))
	require.NoError(t, s.Validate([]byte(`{"e":1000e297}`)), "enum compares numbers by value")
	start := time.Now()
	require.NoError(t, s.Validate([]byte(`{"m":1e-999999}`)))
	require.Error(t, s.Validate([]byte(`{"m":-1e300}`)))
	assert.Less(t, time.Since(start), 2*time.Second, "huge exponents cost no exact arithmetic")
	err = s.Validate([]byte(`{"n":1e999999999}`))
	require.ErrorIs(t, err, fault.Validation, "past float64 the value is not taken for an integer")
	assert.Contains(t, err.Error(), "$.n: number 1e999999999 is out of range")
}

func make100Zeros(times int) []byte {
	out := make([]byte, 0, 100*times)
	for range 100 * times {
		out = append(out, '0')
	}
	return out
}
