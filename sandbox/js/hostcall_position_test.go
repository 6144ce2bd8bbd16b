package js_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An uncaught host error names the script position of the call (a replay
// reports a divergence at it), and its text and chain stay the host's.
func TestHostErrorNamesTheCallPosition(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	sentinel := fault.New(fault.NotFound, "lookup", "no such thing")
	abi := &funcABI{call: func(string, json.RawMessage) (json.RawMessage, error) { return nil, sentinel }}
	err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", ABI: abi,
		Script: sandbox.Script{Name: "lookup.js", Source: "const a = 1;\nconst b = host.thing();\n"}}, nil)
	require.ErrorIs(t, err, sentinel)
	var hc *sandbox.HostCallError
	require.True(t, errors.As(err, &hc), "%v", err)
	assert.Regexp(t, `^lookup\.js:2:\d+$`, hc.Where)
	assert.NotContains(t, err.Error(), "lookup.js:2", "the error's text is the host's")
}

// An error that a rewritten concatenation throws from inside its helper
// (an operand that converts to no primitive, a Symbol, a nullish target)
// names the script's line, as the operator did before it was rewritten,
// not a line of the helper's source.
// REF 9.M19
func TestConcatenationErrorsNameTheScriptLine(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	for _, line3 := range []string{
		`s = s + o`,
		`s = s + Symbol()`,
		"s = `${s}${s}${Symbol()}`",
		`s += Symbol()`,
		`o.p.q += s`,
		`null[s] += s`,
	} {
		err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Name: "conv.js",
			Source: "const o = {valueOf: null, toString: null};\nlet s = \"a\";\n" + line3 + ";\n"}}, nil)
		var se *sandbox.ScriptError
		require.True(t, errors.As(err, &se), "%s: %v", line3, err)
		assert.Regexp(t, `^conv\.js:3:\d+$`, se.Where, line3)
	}
}
