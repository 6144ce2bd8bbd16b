package event_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// REF 4.2.1
func TestValidateSubject(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a.", 511) + "ab" // 1024 bytes
	cases := []struct {
		subject string
		reason  string // "" when valid
	}{
		{"a", ""},
		{"agent.run.r1.start", ""},
		{"A-b_c.d-e.ü", ""},
		{"日本.語", ""},
		{"d e", "whitespace"},
		{"a.b\tc", "whitespace"},
		{"a.b\n", "whitespace"},
		{"a\x00b", "control"},
		{"a\x7f", "control"},
		{"a\u00a0b", "whitespace"},  // no-break space
		{"a\u2028b", "whitespace"},  // line separator
		{"a\u0085b", "whitespace"},  // next line (C1)
		{"a\u009bb", "control"},     // C1 control
		{"a\u200bb", "zero-width"},  // zero-width space
		{"a\u200db", "zero-width"},  // zero-width joiner
		{"\ufeffa", "zero-width"},   // byte order mark
		{"a.\u202eb", "zero-width"}, // right-to-left override
		{"a\u00adb", "zero-width"},  // soft hyphen
		{"a\xffb", "UTF-8"},
		{"a\xe2\x80", "UTF-8"}, // a truncated character
		{long, ""},
		{long + "c", "longer than 1024"},
		{"", "empty"},
		{".a", "empty segment"},
		{"a.", "empty segment"},
		{"a..b", "empty segment"},
		{".", "empty segment"},
		{"a.*", "'*' or '>'"},
		{"a.>", "'*' or '>'"},
		{"a*b", "'*' or '>'"},
		{"a>b.c", "'*' or '>'"},
	}
	for _, c := range cases {
		err := event.ValidateSubject(c.subject)
		if c.reason == "" {
			assert.NoError(t, err, "%q", c.subject)
			continue
		}
		assert.ErrorIs(t, err, event.ErrInvalidSubject, "%q", c.subject)
		assert.ErrorIs(t, err, fault.Validation, "%q", c.subject)
		assert.ErrorContains(t, err, c.reason, "%q", c.subject)
	}
}

// REF 4.2.2
func TestValidatePattern(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern string
		reason  string
	}{
		{"a", ""},
		{"*", ""},
		{">", ""},
		{"a.*.c", ""},
		{"*.*.>", ""},
		{"a.>", ""},
		{strings.Repeat("*.", 511) + ">", ""},
		{strings.Repeat("*.", 512) + ">", "longer than 1024"},
		{"", "empty"},
		{"a..b", "empty segment"},
		{"a.", "empty segment"},
		{">.a", "'>' must be the last"},
		{"a.>.>", "'>' must be the last"},
		{"a*", "whole segment"},
		{"a.b*", "whole segment"},
		{"**", "whole segment"},
		{"a.>b", "whole segment"},
		{"a.>>", "whole segment"},
		{"a.b c.>", "whitespace"},
		{"*.\u200b", "zero-width"},
		{"a.\xff.*", "UTF-8"},
	}
	for _, c := range cases {
		err := event.ValidatePattern(c.pattern)
		if c.reason == "" {
			assert.NoError(t, err, "%q", c.pattern)
			continue
		}
		assert.ErrorIs(t, err, event.ErrInvalidPattern, "%q", c.pattern)
		assert.ErrorIs(t, err, fault.Validation, "%q", c.pattern)
		assert.ErrorContains(t, err, c.reason, "%q", c.pattern)
	}
}

// REF 4.2.2
// REF 4.2.3
func TestMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern, subject string
		want             bool
	}{
		{"agent.run.r1.>", "agent.run.r1.start", true}, // the spec's example
		{"agent.run.>", "agent.run", false},            // '>' needs one or more segments
		{"agent.run.>", "agent.run.r1", true},
		{"agent.run.>", "agent.run.r1.step.a_node_b.start", true},
		{"agent.*.r1", "agent.run.r1", true},
		{"agent.*.r1", "agent.r1", false},       // '*' is exactly one segment
		{"agent.*.r1", "agent.run.x.r1", false}, // not two
		{"agent.run", "Agent.run", false},       // case-sensitive
		{"a.b", "a.b", true},
		{"a.b", "a.b.c", false},
		{"a.b.c", "a.b", false},
		{">", "x", true},
		{"*", "x.y", false},
		{"a.>", "a.b..c", false}, // an invalid subject never matches
		{"a.*", "a.*", false},    // nor does a subject with a wildcard
		{"a..b", "a..b", false},  // an invalid pattern matches nothing
		{"a*", "a*", false},
		{"a.b", "a.b.", false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, event.Match(c.pattern, c.subject), "Match(%q, %q)", c.pattern, c.subject)
		if p, err := event.CompilePattern(c.pattern); err == nil {
			assert.Equal(t, c.want, p.Match(c.subject), "Pattern(%q).Match(%q)", c.pattern, c.subject)
			assert.Equal(t, c.pattern, p.String())
		}
	}
	assert.False(t, event.Pattern{}.Match("a"), "the zero pattern matches nothing")
}

// TestMatchGolden checks every pattern against every subject of a fixed set
// against testdata/match.golden (go test -run TestMatchGolden -update
// rewrites it).
//
// REF 4.2.2
func TestMatchGolden(t *testing.T) {
	t.Parallel()
	patterns := []string{
		">", "*", "*.*", "*.>", "agent.>", "agent.run.>", "agent.run.*", "agent.run.*.start",
		"agent.run.*.step.*.>", "agent.*.r1.>", "runtime.agent.>", "agent.run.r1.stream.>",
	}
	subjects := []string{
		"agent", "agent.run", "agent.run.r1", "agent.run.r1.start", "agent.run.r2.end",
		"agent.run.r1.step.bot_node_n1.start", "agent.run.r1.stream.bot_node_n1.delta",
		"agent.ran.r1.start", "runtime.agent.qa.registered", "runtime.rebuild.started", "Agent.run.r1.start",
	}
	var b strings.Builder
	b.WriteString("# pattern | subject | matches\n")
	for _, p := range patterns {
		for _, s := range subjects {
			fmt.Fprintf(&b, "%s | %s | %t\n", p, s, event.Match(p, s))
		}
	}
	golden(t, "match.golden", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create %s", path)
	assert.Equal(t, string(want), got, "%s differs; run with -update after checking the change", path)
}

// REF 4.2.4
func TestSanitiseID(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"":             "_",
		"abc":          "abc",
		"bot.node.n1":  "bot_node_n1",
		"a*b>c":        "a_b_c",
		"...":          "___",
		"tenant-1/ünï": "tenant-1/ünï",
		"a b\tc":       "a_b_c",
		"a\u200bb":     "a_b",
		"a\xffb":       "a_b",
		"\ufeff":       "_",
	}
	for in, want := range cases {
		got := event.SanitiseID(in)
		assert.Equal(t, want, got, "%q", in)
		assert.NoError(t, event.ValidateSubject(got), "a sanitised id is one valid segment")
		assert.Equal(t, got, event.SanitiseID(got), "idempotent")
	}
}
