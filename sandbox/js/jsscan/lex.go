package jsscan

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c) || c == '_' || c == '$' || c == '\\' || c == '#'
}

// lineBreak returns the length of the line terminator at i (\n, \r\n,
// \r, U+2028, U+2029), or 0.
func (s *scanner) lineBreak(i int) int {
	switch s.at(i) {
	case '\n':
		return 1
	case '\r':
		if s.at(i+1) == '\n' {
			return 2
		}
		return 1
	case 0xE2:
		if s.at(i+1) == 0x80 && (s.at(i+2) == 0xA8 || s.at(i+2) == 0xA9) {
			return 3
		}
	}
	return 0
}

// newline moves past the line terminator of n bytes at s.i.
func (s *scanner) newline(n int) {
	s.i += n
	s.line++
	s.lnAt = s.i
}

// skipSpace moves past white space, line breaks and comments, and
// reports whether a token follows.
func (s *scanner) skipSpace() bool {
	for s.i < len(s.src) && s.err == nil {
		c := s.src[s.i]
		if n := s.lineBreak(s.i); n > 0 {
			s.newline(n)
			s.nl = true
			continue
		}
		switch {
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			s.i++
		case c == '/' && s.at(s.i+1) == '/':
			s.lineComment()
		case c == '/' && s.at(s.i+1) == '*':
			s.blockComment()
		case c >= 0x80:
			r, n := utf8.DecodeRuneInString(s.src[s.i:])
			if r != 0xFEFF && !unicode.Is(unicode.Zs, r) {
				return true
			}
			s.i += n
		default:
			return true
		}
	}
	return false
}

// lineComment moves past a comment that ends with its line (// or a
// hashbang).
func (s *scanner) lineComment() {
	from := s.i
	for s.i < len(s.src) && s.lineBreak(s.i) == 0 {
		s.i++
	}
	s.checkHidden(from, s.i)
}

func (s *scanner) blockComment() {
	start := s.i
	s.i += 2
	for s.i < len(s.src) {
		if s.src[s.i] == '*' && s.at(s.i+1) == '/' {
			s.i += 2
			s.checkHidden(start, s.i)
			return
		}
		if n := s.lineBreak(s.i); n > 0 {
			s.newline(n)
			s.nl = true
			continue
		}
		s.i++
	}
	s.errAt(start, "a comment is not closed")
}

// str scans a string literal quoted with q.
func (s *scanner) str(q byte) {
	start := s.i
	s.i++
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == q:
			s.i++
			s.checkHidden(start, s.i)
			return
		case c == '\\':
			s.i++
			if n := s.lineBreak(s.i); n > 0 {
				s.newline(n)
				continue
			}
			if s.i < len(s.src) {
				s.i++
			}
		case c == '\n' || c == '\r':
			s.errAt(start, "a string is not closed on its line")
			return
		default:
			s.i++
		}
	}
	s.errAt(start, "a string is not closed")
}

// template scans template text from s.i (after ` or the } of a
// substitution) to its end or its next substitution.
func (s *scanner) template() {
	start := s.i
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '`':
			s.i++
			s.checkHidden(start, s.i)
			s.prev = pOperand
			return
		case c == '\\':
			s.i++
			if n := s.lineBreak(s.i); n > 0 {
				s.newline(n)
				continue
			}
			if s.i < len(s.src) {
				s.i++
			}
		case c == '$' && s.at(s.i+1) == '{':
			s.checkHidden(start, s.i)
			s.i += 2
			s.push(level{kind: '$'})
			s.prev = pOp
			return
		default:
			if n := s.lineBreak(s.i); n > 0 {
				s.newline(n)
				continue
			}
			s.i++
		}
	}
	s.errAt(start, "a template literal is not closed")
}

// number scans a numeric literal.
func (s *scanner) number() {
	start := s.i
	decimal := !(s.src[s.i] == '0' && strings.ContainsRune("xXoObB", rune(s.at(s.i+1))))
	for s.i < len(s.src) {
		c := s.src[s.i]
		if (c == '+' || c == '-') && decimal && (s.src[s.i-1] == 'e' || s.src[s.i-1] == 'E') {
			s.i++
			continue
		}
		if !isIdent(c) && c != '.' {
			break
		}
		s.i++
	}
	if s.src[s.i-1] == 'n' {
		s.info.BigInt = true
	}
	if s.b.MaxNumberBytes > 0 && s.i-start > s.b.MaxNumberBytes {
		s.errAt(start, "a number of %d characters, more than %d", s.i-start, s.b.MaxNumberBytes)
	}
	s.prev = pOperand
}

// regexp scans a regular expression literal at s.i.
func (s *scanner) regexp() {
	start := s.i
	end := s.pattern(s.i+1, len(s.src), true)
	if s.err != nil {
		return
	}
	if n := end - start - 1; s.b.MaxPatternBytes > 0 && n > s.b.MaxPatternBytes {
		s.errAt(start, "a regular expression of %d bytes, more than %d", n, s.b.MaxPatternBytes)
		return
	}
	s.checkHidden(start, end+1)
	if s.regexpAt != nil {
		s.regexpAt(start)
	}
	s.i = end + 1
	for s.i < len(s.src) && isIdent(s.src[s.i]) {
		s.i++
	}
	s.prev = pOperand
}

// pattern scans a regular-expression pattern from i to end (a literal:
// to its closing slash, on one line) and returns where it ended. Its
// groups count on top of the current depth.
func (s *scanner) pattern(i, end int, literal bool) int {
	inClass := false
	groups := 0
	defer func() { s.depth -= groups }()
	for ; i < end; i++ {
		c := s.src[i]
		if literal && s.lineBreak(i) > 0 {
			s.errAt(i, "a regular expression is not closed on its line")
			return i
		}
		switch {
		case c == '\\':
			i++
			if literal && s.lineBreak(i) > 0 {
				s.errAt(i, "a regular expression is not closed on its line")
				return i
			}
		case c == '[':
			inClass = true
		case c == ']':
			inClass = false
		case inClass:
		case c == '(':
			groups++
			s.i = i
			s.deeper(1)
			if s.err != nil {
				return i
			}
		case c == ')':
			if groups > 0 {
				groups--
				s.depth--
			}
		case c == '/' && literal:
			return i
		}
	}
	if literal {
		s.errAt(i, "a regular expression is not closed")
	}
	return i
}

// MaxHiddenBrackets is how many brackets the text of one string, template
// text, comment or regular expression may leave open, counted as if it
// were code, and MaxHiddenTotal how many all of them together may leave
// open at any point of the source (package doc, "Bounds"). The scan's
// count rests on telling a pattern from a division as goja does; were it
// ever to guess wrong, the text it took for code could hide no more levels
// than these from its count. Real text never comes near them.
const (
	MaxHiddenBrackets = 256
	MaxHiddenTotal    = 4096
)

// checkHidden refuses the text src[from:to] when, read as code, it leaves
// more than MaxHiddenBrackets brackets open at any point, or when, read as
// code after the texts before it, all of them have more than
// MaxHiddenTotal open at a point of it: a close in a text closes what an earlier text left
// open, if anything.
func (s *scanner) checkHidden(from, to int) {
	open, most, hidden, peak := 0, 0, s.hidden, s.hidden
	for _, c := range []byte(s.src[from:to]) {
		switch c {
		case '(', '[', '{':
			open++
			hidden++
			most, peak = max(most, open), max(peak, hidden)
		case ')', ']', '}':
			open = max(open-1, 0)
			hidden = max(hidden-1, 0)
		}
	}
	s.hidden = hidden
	switch {
	case most > MaxHiddenBrackets:
		s.errAt(from, "a string, comment or pattern leaves more than %d brackets open", MaxHiddenBrackets)
	case peak > MaxHiddenTotal:
		s.errAt(from, "strings, comments and patterns leave more than %d brackets open together", MaxHiddenTotal)
	}
}
