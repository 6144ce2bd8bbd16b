package event

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
)

// MaxSubjectLen is the longest subject or pattern, in bytes.
const MaxSubjectLen = 1024

// The wildcard segments of a pattern.
const (
	WildcardOne  = "*" // exactly one segment
	WildcardTail = ">" // one or more trailing segments
)

// ErrInvalidSubject is returned (wrapped, with the reason) for a subject
// that breaks the rules of ValidateSubject. It carries the Validation kind.
var ErrInvalidSubject = fault.New(fault.Validation, "", "invalid subject")

// ErrInvalidPattern is returned (wrapped, with the reason) for a pattern
// that breaks the rules of ValidatePattern. It carries the Validation kind.
var ErrInvalidPattern = fault.New(fault.Validation, "", "invalid pattern")

// ValidateSubject reports whether s is a valid subject: segments joined by
// '.', non-empty, at most MaxSubjectLen bytes, no empty segment (so no
// leading, trailing or doubled '.'), no '*' or '>' anywhere, and no
// character that would make two subjects look alike but differ (see
// InvisibleRune): whitespace, control and format (zero-width, bidi)
// characters, and bytes that are not UTF-8. The error matches
// ErrInvalidSubject and fault.Validation.
func ValidateSubject(s string) error {
	if reason := subjectProblem(s); reason != "" {
		return fault.Wrap(fault.Validation, ErrInvalidSubject, "validate subject", "%q: %s", abbreviate(s), reason)
	}
	return nil
}

func subjectProblem(s string) string {
	switch {
	case s == "":
		return "subject is empty"
	case len(s) > MaxSubjectLen:
		return "subject is longer than 1024 bytes"
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			switch c := s[i]; {
			case c == '*' || c == '>':
				return "a subject must not contain '*' or '>'"
			case c == '.':
			case c <= ' ' || c == 0x7f:
				return "a subject must not contain whitespace or control characters"
			case c < utf8.RuneSelf:
				continue
			default:
				n, reason := runeProblem(s[i:])
				if reason != "" {
					return reason
				}
				i += n - 1
				continue
			}
		}
		if i == start {
			return "empty segment"
		}
		start = i + 1
	}
	return ""
}

// runeProblem checks the multi-byte character at the start of s: its
// length in bytes, and the reason it is refused or "".
func runeProblem(s string) (int, string) {
	r, n := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && n <= 1:
		return n, "a subject must be UTF-8"
	case InvisibleRune(r):
		return n, "a subject must not contain whitespace, control or zero-width characters"
	}
	return n, ""
}

// InvisibleRune reports whether r is a character a subject must not hold:
// white space (unicode.IsSpace), a control character (C0, DEL, C1) or a
// format character (category Cf: zero-width space and joiners, the byte
// order mark, bidirectional marks and overrides, soft hyphen). Each either
// splits what a reader takes for one token or makes two different subjects
// print alike.
func InvisibleRune(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
}

// ValidatePattern reports whether p is a valid pattern: a subject in which
// a whole segment may be '*' (exactly one segment) and the last segment may
// be '>' (one or more segments). A wildcard inside a segment ("a*") is
// invalid, and so is '>' anywhere but last. The error matches
// ErrInvalidPattern and fault.Validation.
func ValidatePattern(p string) error {
	_, err := CompilePattern(p)
	return err
}

// Pattern is a compiled, valid pattern. The zero Pattern matches nothing.
// A Pattern is immutable and safe for concurrent use.
type Pattern struct {
	raw  string
	segs []string
}

// CompilePattern validates p and returns it compiled.
func CompilePattern(p string) (Pattern, error) {
	if reason := patternProblem(p); reason != "" {
		return Pattern{}, fault.Wrap(fault.Validation, ErrInvalidPattern, "validate pattern", "%q: %s", abbreviate(p), reason)
	}
	return Pattern{raw: p, segs: strings.Split(p, ".")}, nil
}

func patternProblem(p string) string {
	switch {
	case p == "":
		return "pattern is empty"
	case len(p) > MaxSubjectLen:
		return "pattern is longer than 1024 bytes"
	}
	segs := strings.Split(p, ".")
	for i, seg := range segs {
		switch {
		case seg != WildcardOne && seg != WildcardTail && seg != "" && segmentProblem(seg) != "":
			return segmentProblem(seg)
		case seg == "":
			return "empty segment"
		case seg == WildcardTail && i != len(segs)-1:
			return "'>' must be the last segment"
		case seg == WildcardOne || seg == WildcardTail:
		case strings.ContainsAny(seg, "*>"):
			return "a wildcard must be a whole segment"
		}
	}
	return ""
}

// MustCompilePattern is CompilePattern that panics on an invalid pattern,
// for patterns written in the program text.
func MustCompilePattern(p string) Pattern {
	c, err := CompilePattern(p)
	if err != nil {
		panic(err)
	}
	return c
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.raw }

// Match reports whether subject matches the pattern. Matching is
// case-sensitive; an invalid subject matches nothing.
func (p Pattern) Match(subject string) bool {
	if len(p.segs) == 0 || subject == "" || len(subject) > MaxSubjectLen {
		return false
	}
	rest := subject
	last := len(p.segs) - 1
	for i, want := range p.segs {
		seg, tail, more := strings.Cut(rest, ".")
		if more && tail == "" {
			return false // a trailing '.'
		}
		switch want {
		case WildcardTail:
			return validSegment(seg) && (!more || subjectProblem(tail) == "")
		case WildcardOne:
			if !validSegment(seg) {
				return false
			}
		default:
			if want != seg { // a literal segment is valid, so seg is too
				return false
			}
		}
		if i == last || !more {
			return i == last && !more
		}
		rest = tail
	}
	return false
}

// validSegment reports whether seg is a valid segment of a subject.
func validSegment(seg string) bool {
	return seg != "" && strings.IndexByte(seg, '*') < 0 && strings.IndexByte(seg, '>') < 0 && segmentProblem(seg) == ""
}

// Match reports whether subject matches pattern. An invalid pattern or an
// invalid subject matches nothing. To match one pattern often, compile it
// once with CompilePattern.
func Match(pattern, subject string) bool {
	p, err := CompilePattern(pattern)
	if err != nil {
		return false
	}
	return p.Match(subject)
}

// SanitiseID makes s safe to use as one subject segment: '.', '*' and '>',
// every character InvisibleRune reports and every byte that is not UTF-8
// become '_', and an empty s becomes "_". Every id placed in a subject goes
// through it, so an id never adds segments or wildcards. It is idempotent.
func SanitiseID(s string) string {
	if s == "" {
		return "_"
	}
	if strings.IndexAny(s, ".*>") < 0 && segmentProblem(s) == "" {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '.' || r == '*' || r == '>', r == utf8.RuneError && n <= 1, InvisibleRune(r):
			b.WriteByte('_')
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// segmentProblem checks the characters of one segment of a subject or a
// pattern (not its wildcards): the reason it is refused, or "".
func segmentProblem(seg string) string {
	for i := 0; i < len(seg); {
		switch c := seg[i]; {
		case c <= ' ' || c == 0x7f:
			return "a subject must not contain whitespace or control characters"
		case c >= utf8.RuneSelf:
			n, reason := runeProblem(seg[i:])
			if reason != "" {
				return reason
			}
			i += n
		default:
			i++
		}
	}
	return ""
}

func abbreviate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
