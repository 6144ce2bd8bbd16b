package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/engine/tools"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tool definitions are often copied from an OpenAI function definition or
// an MCP server's tools/list: the parameters schemas below have the shapes
// those use (strict mode with nullable types and additionalProperties
// false, recursive $defs with anyOf, zod-to-json-schema's draft-07 output
// with definitions, numeric bounds, patterns and formats). Each compiles
// as a tool's parameters, accepts the arguments it should, and refuses the
// others with a message naming the tool and the argument's path.
func TestSchemaShapesOfOpenAIAndMCP(t *testing.T) {
	t.Parallel()
	type check struct {
		args string
		want string // "": accepted; otherwise a substring of the error result
	}
	shapes := []struct {
		name, schema string
		checks       []check
	}{{
		name: "openai_strict_weather",
		schema: `{"type": "object",
		  "properties": {
		    "location": {"type": "string", "description": "City and country e.g. Bogotá, Colombia"},
		    "units": {"type": ["string", "null"], "enum": ["celsius", "fahrenheit", null], "description": "Units the temperature will be returned in."}
		  },
		  "required": ["location", "units"],
		  "additionalProperties": false}`,
		checks: []check{
			{`{"location": "Paris, France", "units": null}`, ""},
			{`{"location": "Paris, France", "units": "celsius"}`, ""},
			{`{"location": "Paris, France"}`, `$.units: required`},
			{`{"location": "Paris", "units": "kelvin"}`, `$.units: not one of the allowed values`},
			{`{"location": "Paris", "units": null, "country": "FR"}`, `$.country: unknown property`},
		},
	}, {
		name: "openai_linked_list",
		schema: `{"type": "object",
		  "properties": {"linked_list": {"$ref": "#/$defs/linked_list_node"}},
		  "$defs": {
		    "linked_list_node": {"type": "object",
		      "properties": {
		        "value": {"type": "number"},
		        "next": {"anyOf": [{"$ref": "#/$defs/linked_list_node"}, {"type": "null"}]}
		      },
		      "additionalProperties": false, "required": ["next", "value"]}
		  },
		  "additionalProperties": false, "required": ["linked_list"]}`,
		checks: []check{
			{`{"linked_list": {"value": 1, "next": {"value": 2.5, "next": null}}}`, ""},
			{`{"linked_list": {"value": 1, "next": {"value": "two", "next": null}}}`, `$.linked_list.next.value: want number, got string`},
			{`{"linked_list": {"value": 1, "next": {"value": 2}}}`, `$.linked_list.next.next: required`},
		},
	}, {
		name: "mcp_read_text_file",
		schema: `{"type": "object",
		  "properties": {
		    "path": {"type": "string"},
		    "head": {"type": "number", "description": "If provided, returns only the first N lines of the file"},
		    "tail": {"type": "number", "description": "If provided, returns only the last N lines of the file"}
		  },
		  "required": ["path"],
		  "additionalProperties": false,
		  "$schema": "http://json-schema.org/draft-07/schema#"}`,
		checks: []check{
			{`{"path": "/tmp/a.txt", "head": 10}`, ""},
			{`{"head": 10}`, `$.path: required`},
			{`{"path": "a", "head": "10"}`, `$.head: want number, got string`},
		},
	}, {
		name: "mcp_fetch",
		schema: `{"type": "object", "title": "Fetch",
		  "description": "Parameters for fetching a URL.",
		  "properties": {
		    "url": {"type": "string", "format": "uri", "minLength": 1, "title": "Url", "description": "URL to fetch"},
		    "max_length": {"type": "integer", "default": 5000, "exclusiveMinimum": 0, "exclusiveMaximum": 1000000, "title": "Max Length"},
		    "start_index": {"type": "integer", "default": 0, "minimum": 0, "title": "Start Index"},
		    "raw": {"type": "boolean", "default": false, "title": "Raw"},
		    "lang": {"type": "string", "pattern": "^[a-z]{2}(-[A-Z]{2})?$"},
		    "mode": {"oneOf": [{"const": "fast"}, {"const": "full"}]},
		    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": true}
		  },
		  "required": ["url"],
		  "definitions": {"unused": {"type": "string"}}}`,
		checks: []check{
			{`{"url": "https://example.com", "max_length": 100, "lang": "en-GB", "mode": "fast", "tags": ["a", "b"]}`, ""},
			{`{"url": "not a uri but format is an annotation"}`, ""},
			{`{"url": ""}`, `$.url: minLength: got 0, want 1`},
			{`{"url": "u", "max_length": 0}`, `$.max_length: exclusiveMinimum: got 0, want 0`},
			{`{"url": "u", "start_index": -1}`, `$.start_index: minimum: got -1, want 0`},
			{`{"url": "u", "start_index": 1.5}`, `$.start_index: want integer, got number`},
			{`{"url": "u", "lang": "english"}`, `$.lang: 'english' does not match pattern`},
			{`{"url": "u", "mode": "slow"}`, `$.mode: not the allowed value`},
			{`{"url": "u", "tags": ["a", "a"]}`, `$.tags: items at 0 and 1 are equal`},
		},
	}}
	var settings []tools.ToolSettings
	for _, s := range shapes {
		settings = append(settings, tools.ToolSettings{Name: s.name, Parameters: json.RawMessage(s.schema), Source: jsonString("echo")})
	}
	rt := &fakeRuntime{name: "fake", fn: func(context.Context, sandbox.Invocation) (sandbox.Outcome, error) {
		return sandbox.Outcome{Writes: sandbox.Writes{{Op: sandbox.SetVar, Name: "result", Value: "ok"}}}, nil
	}}
	a, err := tools.New(context.Background(), tools.Settings{ScriptRuntimeName: "fake", Tools: settings},
		map[string]sandbox.Runtime{"fake": rt})
	require.NoError(t, err)
	for _, s := range shapes {
		for _, c := range s.checks {
			res, err := a.Execute(context.Background(), batch(agenttest.NewHost(), call("c", s.name, c.args)))
			require.NoError(t, err)
			require.Len(t, res, 1)
			if c.want == "" {
				assert.False(t, res[0].IsError, "%s %s: %s", s.name, c.args, res[0].Content)
				continue
			}
			assert.True(t, res[0].IsError, "%s %s", s.name, c.args)
			assert.Contains(t, res[0].Content, `tool "`+s.name+`": invalid arguments: `, "%s %s", s.name, c.args)
			assert.Contains(t, res[0].Content, c.want, "%s %s", s.name, c.args)
		}
	}
	assert.Len(t, rt.invocations(), 6, "only accepted arguments reach the runtime")
}
