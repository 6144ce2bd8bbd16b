package event_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/corral-rt/corral/runtime/event"
)

// validSubjectOracle restates the subject rules of REF 4.2.1 in the
// plainest way, to check ValidateSubject against.
func validSubjectOracle(s string) bool {
	if s == "" || len(s) > event.MaxSubjectLen || strings.ContainsAny(s, "*>") || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.In(r, unicode.Cf) {
			return false
		}
	}
	for _, seg := range strings.Split(s, ".") {
		if seg == "" {
			return false
		}
	}
	return true
}

// matchOracle restates REF 4.2.2 over split segments.
func matchOracle(pattern, subject string) bool {
	if event.ValidatePattern(pattern) != nil || !validSubjectOracle(subject) {
		return false
	}
	ps, ss := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, p := range ps {
		switch {
		case p == ">":
			return len(ss) > i
		case i >= len(ss):
			return false
		case p != "*" && p != ss[i]:
			return false
		}
	}
	return len(ps) == len(ss)
}

// REF 4.2.1
// REF 4.2.4
func FuzzValidateSubject(f *testing.F) {
	for _, s := range []string{"", "a", "a.b", "a..b", ".a", "a.", "a.*", "a.>", "agent.run.r1.start", "ü.\x00", strings.Repeat("a", 1025),
		"a b", "a\tb", "a.b\n", "a\u200bb", "\ufeffa", "a\u202eb", "a\u00a0b", "a\u0085b", "a\x7f", "a\xffb", "ü.ok", "日本.語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := event.ValidateSubject(s)
		if (err == nil) != validSubjectOracle(s) {
			t.Fatalf("ValidateSubject(%q) = %v, oracle says valid=%t", s, err, validSubjectOracle(s))
		}
		if err == nil {
			if !event.Match(s, s) {
				t.Fatalf("valid subject %q does not match itself as a pattern", s)
			}
			if event.ValidatePattern(s) != nil {
				t.Fatalf("valid subject %q is not a valid pattern", s)
			}
		}
		id := event.SanitiseID(s)
		if strings.ContainsAny(id, ".*>") || id == "" {
			t.Fatalf("SanitiseID(%q) = %q is not one plain segment", s, id)
		}
		if len(s) <= event.MaxSubjectLen && event.ValidateSubject(id) != nil {
			t.Fatalf("SanitiseID(%q) = %q is not a valid subject", s, id)
		}
		if event.SanitiseID(id) != id {
			t.Fatalf("SanitiseID is not idempotent on %q", s)
		}
	})
}

// REF 4.2.2
// REF 4.2.3
func FuzzPatternMatch(f *testing.F) {
	seeds := [][2]string{
		{"agent.run.r1.>", "agent.run.r1.start"}, {"agent.run.>", "agent.run"}, {"*", "a"}, {"*.>", "a"},
		{">", "a.b.c"}, {"a.*.c", "a.b.c"}, {"a*", "a*"}, {"a.>.b", "a.x.b"}, {"a..b", "a..b"}, {"a.b", "a.b."},
		{"a.*", "a.b c"}, {"a b.>", "a b.c"}, {"a.\u200b", "a.\u200b"}, {"*.>", "a.\xff"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(checkMatch)
}

// checkMatch checks Match(pattern, subject) against the oracle and the
// invariants of the pattern syntax.
func checkMatch(t *testing.T, pattern, subject string) {
	got := event.Match(pattern, subject)
	if want := matchOracle(pattern, subject); got != want {
		t.Fatalf("Match(%q, %q) = %t, oracle says %t", pattern, subject, got, want)
	}
	p, err := event.CompilePattern(pattern)
	if err != nil {
		if got {
			t.Fatalf("invalid pattern %q matched %q", pattern, subject)
		}
		return
	}
	if p.Match(subject) != got {
		t.Fatalf("compiled and one-shot Match disagree on (%q, %q)", pattern, subject)
	}
	if got && event.ValidateSubject(subject) != nil {
		t.Fatalf("pattern %q matched the invalid subject %q", pattern, subject)
	}
	checkSegmentCounts(t, pattern, subject, got)
}

// checkSegmentCounts: a pattern ending in '>' matches only subjects with
// more segments than its prefix; any other pattern only subjects with as
// many segments as it has; a pattern without wildcards only itself.
func checkSegmentCounts(t *testing.T, pattern, subject string, matched bool) {
	if !matched {
		return
	}
	np, ns := strings.Count(pattern, ".")+1, strings.Count(subject, ".")+1
	switch {
	case strings.HasSuffix(pattern, ">"):
		if ns <= np-1 {
			t.Fatalf("%q matched %q, which has no segment for '>'", pattern, subject)
		}
	case ns != np:
		t.Fatalf("%q matched %q with a different segment count", pattern, subject)
	}
	if !strings.ContainsAny(pattern, "*>") && pattern != subject {
		t.Fatalf("literal pattern %q matched a different subject %q", pattern, subject)
	}
}
