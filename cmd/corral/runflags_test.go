package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRunFlags(t *testing.T) {
	t.Parallel()
	base := runOptions{contextID: defaultContext, message: "hi"}
	with := func(f func(o *runOptions)) runOptions {
		o := base
		f(&o)
		return o
	}
	tests := []struct {
		name    string
		args    []string
		want    runOptions
		wantErr string
	}{
		{"message only", []string{"--message", "hi"}, base, ""},
		{"single dash flags", []string{"-message=hi"}, base, ""},
		{"document first", []string{"d.yaml", "--message", "hi"}, with(func(o *runOptions) { o.doc = "d.yaml" }), ""},
		{"document last", []string{"--message", "hi", "d.yaml"}, with(func(o *runOptions) { o.doc = "d.yaml" }), ""},
		{"every flag", []string{"--agent", "qa", "--context", "c1", "--message", "hi", "--json", "--timeout", "1m30s"},
			with(func(o *runOptions) { o.agent, o.contextID, o.json, o.timeout = "qa", "c1", true, 90*time.Second }), ""},
		{"fresh", []string{"--fresh", "--message", "hi"}, with(func(o *runOptions) { o.fresh = true }), ""},
		{"message with spaces", []string{"--message", "hello there"}, with(func(o *runOptions) { o.message = "hello there" }), ""},
		{"no message", []string{"d.yaml"}, runOptions{}, "--message is required"},
		{"empty message", []string{"--message", ""}, runOptions{}, "--message is required"},
		{"blank context", []string{"--message", "hi", "--context", " "}, runOptions{}, "--context must not be blank"},
		{"negative timeout", []string{"--message", "hi", "--timeout", "-1s"}, runOptions{}, "--timeout must not be negative"},
		{"malformed timeout", []string{"--message", "hi", "--timeout", "soon"}, runOptions{}, `invalid value "soon"`},
		{"unknown flag", []string{"--message", "hi", "--verbose"}, runOptions{}, "not defined: -verbose"},
		{"flag without value", []string{"--message"}, runOptions{}, "flag needs an argument"},
		{"two documents", []string{"a.yaml", "--message", "hi", "b.yaml"}, runOptions{}, `want at most one document, got ["a.yaml" "b.yaml"]`},
		{"two documents after flags", []string{"--message", "hi", "a.yaml", "b.yaml"}, runOptions{}, "want at most one document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseRunFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.True(t, fault.Is(err, fault.Validation), "a bad command line is a validation error")
				assert.Equal(t, exitBadInput, exitCodeOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseRunFlagsHelp(t *testing.T) {
	t.Parallel()
	var usage bytes.Buffer
	_, err := parseRunFlags([]string{"-h"}, &usage)
	assert.True(t, errors.Is(err, flag.ErrHelp))
	for _, f := range []string{"-agent", "-context", "-message", "-json", "-timeout"} {
		assert.Contains(t, usage.String(), f)
	}
}

func TestPickAgent(t *testing.T) {
	t.Parallel()
	doc := func(ids ...string) *deploy.Document {
		d := &deploy.Document{Agents: map[string]agent.Definition{}}
		for _, id := range ids {
			d.Agents[id] = agent.Definition{}
		}
		return d
	}
	tests := []struct {
		name    string
		doc     *deploy.Document
		want    string
		got     string
		wantErr string
		kind    *fault.Kind
	}{
		{"the only agent", doc("demo"), "", "demo", "", nil},
		{"the named agent", doc("a", "b"), "b", "b", "", nil},
		{"an unknown agent", doc("b", "a"), "c", "", `agent "c" is not in the document (agents: a, b)`, fault.NotFound},
		{"several agents, none named", doc("b", "a"), "", "", "--agent is required: the document declares a, b", fault.Validation},
		{"no agents", doc(), "", "", "the document declares no agent", fault.Validation},
		{"no agents, one named", doc(), "x", "", "(agents: none)", fault.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := pickAgent(tt.doc, tt.want)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.True(t, fault.Is(err, tt.kind))
				assert.Equal(t, exitBadInput, exitCodeOf(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.got, got)
		})
	}
}

// FuzzParseRunFlags: any command line parses or fails with a validation
// error (or help), never panics, and a parsed one has a message.
func FuzzParseRunFlags(f *testing.F) {
	f.Add("d.yaml\x00--message\x00hi")
	f.Add("--message\x00hi\x00--json\x00--timeout\x001s")
	f.Add("-h")
	f.Add("--agent\x00\x00--context")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Split(line, "\x00")
		o, err := parseRunFlags(args, io.Discard)
		switch {
		case errors.Is(err, flag.ErrHelp):
		case err != nil:
			assert.True(t, fault.Is(err, fault.Validation), "%v", err)
		default:
			assert.NotEmpty(t, o.message)
			assert.GreaterOrEqual(t, o.timeout, time.Duration(0))
			assert.NotEmpty(t, strings.TrimSpace(o.contextID))
		}
	})
}
