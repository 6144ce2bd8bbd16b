package jsscan

import (
	"fmt"
	"strings"
)

// The defaults the sandbox applies (docs/sandbox.md, "Source limits").
const (
	// MaxDepth bounds the levels of nesting. goja's parser and compiler
	// take at most about 4.4 KiB of Go stack a level (an object literal
	// nested in an object literal, the costliest measured; a parenthesis
	// takes 2.1 KiB), so 1000 levels stay under 5 MiB of stack, far below
	// Go's 1 GiB ceiling, while no hand-written script comes near them.
	MaxDepth = 1000
	// MaxScriptBytes bounds a node script.
	MaxScriptBytes = 4 << 20
	// MaxExprBytes bounds a graph condition or expression.
	MaxExprBytes = 64 << 10
	// MaxCodeBytes bounds source made at run time and handed to eval or
	// the Function constructor: 1 MiB parses in tens of milliseconds.
	MaxCodeBytes = 1 << 20
	// MaxPatternBytes bounds one regular-expression pattern: regexp2
	// compiles about a microsecond and a hundred bytes of memory a pattern
	// byte, so 32 KiB stay within tens of milliseconds and a few MiB.
	MaxPatternBytes = 32 << 10
	// MaxNumberBytes bounds one numeric literal: goja parses a BigInt
	// literal in time that grows with the square of its digits.
	MaxNumberBytes = 4096
)

// Bounds are what a scan holds a source to; a zero field bounds nothing.
type Bounds struct {
	MaxBytes        int // the source's size
	MaxDepth        int // levels of nesting, as the package doc counts them
	MaxPatternBytes int // one regular expression literal's pattern
	MaxNumberBytes  int // one numeric literal
	// Hashbang: the source is parsed as it is, not wrapped in a function,
	// so a #! at its very start opens a comment to the end of its line,
	// as goja reads it (eval and Function code; a node script or an
	// expression is wrapped, and there #! is not a comment).
	Hashbang bool
}

// Info is what a scan found that a caller needs.
type Info struct {
	// BigInt is set when the source can make a BigInt by itself: it holds
	// a BigInt literal (12n) or the text BigInt anywhere (a name, a string,
	// a comment).
	BigInt bool
}

// Error is a source a scan refused: where, and why.
type Error struct {
	Line, Column int // from 1; the column counts bytes
	Reason       string
}

func (e *Error) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Reason)
}

// Script scans a node script with the sandbox's bounds.
func Script(src string) (Info, error) { return Scan(src, defaults(MaxScriptBytes)) }

// Expr scans a graph condition or expression with the sandbox's bounds.
func Expr(src string) (Info, error) { return Scan(src, defaults(MaxExprBytes)) }

// Code scans source made at run time for eval or the Function
// constructor with the sandbox's bounds.
func Code(src string) (Info, error) { return Scan(src, codeBounds()) }

func codeBounds() Bounds {
	b := defaults(MaxCodeBytes)
	b.Hashbang = true
	return b
}

func defaults(size int) Bounds {
	return Bounds{MaxBytes: size, MaxDepth: MaxDepth, MaxPatternBytes: MaxPatternBytes, MaxNumberBytes: MaxNumberBytes}
}

// Pattern checks a regular-expression pattern (the source of new
// RegExp(p), without slashes or flags): its size and how deep its groups
// nest.
func Pattern(p string) error {
	s := &scanner{src: p, b: defaults(0), line: 1}
	if len(p) > MaxPatternBytes {
		return s.errAt(0, "a regular expression of %d bytes, more than %d", len(p), MaxPatternBytes)
	}
	s.pattern(0, len(p), false)
	if s.err != nil {
		return s.err
	}
	return nil
}

// Scan checks src against b.
func Scan(src string, b Bounds) (Info, error) { return scan(src, b, nil) }

// scan is Scan, telling regexpAt (when not nil) where each regular
// expression literal starts.
func scan(src string, b Bounds, regexpAt func(int)) (Info, error) {
	s := &scanner{src: src, b: b, line: 1, prev: pStmt, regexpAt: regexpAt}
	if b.MaxBytes > 0 && len(src) > b.MaxBytes {
		s.advanceTo(b.MaxBytes)
		return Info{}, s.errAt(b.MaxBytes, "the source is %d bytes, more than %d", len(src), b.MaxBytes)
	}
	s.stack = append(s.stack, level{kind: 0})
	if b.Hashbang && strings.HasPrefix(src, "#!") {
		s.lineComment()
	}
	s.run()
	if s.err != nil {
		return Info{}, s.err
	}
	s.info.BigInt = s.info.BigInt || strings.Contains(src, "BigInt")
	return s.info, nil
}

// prev classes: what the last token leaves the grammar expecting.
const (
	pStmt    = iota // the start of a statement (an operand may follow)
	pOp             // an operator or opening bracket: an operand follows
	pKeyword        // a keyword that takes an operand (return, typeof...)
	pOperand        // the end of an operand: an operator follows
	pPostfix        // a postfix ++ or --
	pParams         // the ) of a function's parameters: its body follows
	pDot            // . or ?.: a property name follows
	pArrow          // =>: a body follows
)

// Brace kinds.
const (
	braceBlock  = 'b' // a block, or the body of a declaration: a statement follows
	braceExpr   = 'e' // the body of a function or class expression: an operator follows
	braceObject = 'o' // an object literal
	// braceArrow is the body of an arrow function: an operator may follow
	// on its line, but no operator can take an arrow function as its left
	// operand, so a line break after it ends the statement (a / there
	// starts a pattern, as goja reads it).
	braceArrow = 'a'
)

// level is one open bracket (kind '(', '[', '{', or '$' for a template
// substitution; 0 for the top) and what is pending within it.
type level struct {
	kind    byte
	brace   byte  // for '{': braceBlock, braceExpr or braceObject
	ctrl    bool  // for '(': the head of if, for, while, with, switch or catch
	fn      byte  // for '(': the parameters of a function: braceBlock or braceExpr for its body
	inCase  bool  // a case or default label waits for its colon
	k       int32 // chain operators pending
	stmt    int32 // statement heads pending
	ternary int32 // ? waiting for :
	at      int   // where the bracket opened (of ${, its {)
}

type scanner struct {
	src   string
	b     Bounds
	i     int
	line  int
	lnAt  int // where the line starts
	stack []level
	depth int
	prev  int
	nl    bool // a line break since the last token
	ended bool // a statement ended: the next token resets statement heads unless it is else
	noASI bool // the last token was async: an operand may follow it
	// arrowEnd: the last token was the } of an arrow function's body.
	arrowEnd bool
	// hidden is how many brackets the texts so far leave open, read as
	// code (checkHidden).
	hidden int
	// asyncStmt: that async stood at the start of a statement.
	asyncStmt bool
	// pendingFunc is the body kind of a function keyword waiting for its
	// parameters; pendingClass that of a class keyword waiting for its
	// body, at stack depth classAt.
	pendingFunc, pendingClass byte
	pendingCtrl               bool
	classAt                   int
	info                      Info
	err                       *Error
	// regexpAt, when not nil, is told where each regular expression
	// literal starts (the tests compare it with goja's parser).
	regexpAt func(at int)
}

func (s *scanner) top() *level { return &s.stack[len(s.stack)-1] }

func (s *scanner) errAt(at int, format string, args ...any) *Error {
	if s.err == nil {
		var line, lnAt int
		if at < s.lnAt { // before the line the scan is on: count again
			line, lnAt = 1+strings.Count(s.src[:at], "\n"), strings.LastIndexByte(s.src[:at], '\n')+1
		} else {
			s.advanceTo(at)
			line, lnAt = s.line, s.lnAt
		}
		s.err = &Error{Line: line, Column: at - lnAt + 1, Reason: fmt.Sprintf(format, args...)}
	}
	return s.err
}

// advanceTo counts the lines up to at (for an error past the scan).
func (s *scanner) advanceTo(at int) {
	for j := s.i; j < at && j < len(s.src); j++ {
		if s.src[j] == '\n' {
			s.line++
			s.lnAt = j + 1
		}
	}
	s.i = max(s.i, at)
}

// deeper adds n levels at the current position.
func (s *scanner) deeper(n int) {
	s.depth += n
	if s.b.MaxDepth > 0 && s.depth > s.b.MaxDepth {
		s.errAt(s.i, "nesting deeper than %d levels (brackets, operator chains and statement heads)", s.b.MaxDepth)
	}
}

func (s *scanner) chain() {
	s.top().k++
	s.deeper(1)
}

func (s *scanner) stmtHead() {
	s.top().stmt++
	s.deeper(1)
}

func (s *scanner) resetChain() {
	t := s.top()
	s.depth -= int(t.k)
	t.k = 0
}

func (s *scanner) push(l level) {
	l.at = s.i - 1 // s.i is past the bracket
	s.stack = append(s.stack, l)
	s.deeper(1)
}

// pop closes the top bracket, which must be kind.
func (s *scanner) pop(kind byte) (level, bool) {
	t := *s.top()
	if len(s.stack) == 1 || t.kind != kind {
		s.errAt(s.i, "unbalanced %q", s.src[s.i])
		return t, false
	}
	s.stack = s.stack[:len(s.stack)-1]
	s.depth -= 1 + int(t.k) + int(t.stmt)
	return t, true
}

// operandStart handles a token that starts an operand: after the end of
// another, the statement ended there (a line break, or a syntax error the
// parser reports).
func (s *scanner) operandStart() {
	if (s.prev == pOperand || s.prev == pPostfix) && !s.noASI {
		s.resetChain()
		s.ended = true
		s.prev = pStmt
	}
}

// regexAllowed reports whether a slash here starts a regular expression.
func (s *scanner) regexAllowed() bool {
	return s.prev != pOperand && s.prev != pPostfix && s.prev != pParams
}

// endStatement: a statement ended at ; or the } of a block.
func (s *scanner) endStatement() {
	s.resetChain()
	s.ended = true
	s.prev = pStmt
}

func (s *scanner) run() {
	for s.err == nil {
		if !s.skipSpace() {
			break
		}
		if s.arrowEnd {
			s.arrowEnd = false
			if s.nl {
				s.endStatement()
			}
		}
		if s.ended {
			if !strings.HasPrefix(s.src[s.i:], "else") || isIdent(s.at(s.i+4)) {
				t := s.top()
				s.depth -= int(t.stmt)
				t.stmt = 0
			}
			s.ended = false
		}
		noASI := s.noASI
		s.token()
		if noASI {
			s.noASI = false
		}
		s.nl = false
	}
	if s.err == nil && len(s.stack) > 1 {
		s.errAt(s.top().at, "%q is not closed", s.top().kind)
	}
}

func (s *scanner) at(i int) byte {
	if i < len(s.src) {
		return s.src[i]
	}
	return 0
}

// token scans one token at s.i.
func (s *scanner) token() {
	c := s.src[s.i]
	switch {
	case c == '"' || c == '\'':
		s.operandStart()
		s.str(c)
		s.prev = pOperand
	case c == '`':
		s.member()
		s.i++
		s.template()
	case isDigit(c) || (c == '.' && isDigit(s.at(s.i+1))):
		s.operandStart()
		s.number()
	case isIdent(c) || c >= 0x80:
		s.word()
	case c == '/' && s.regexAllowed():
		s.operandStart()
		s.regexp()
	default:
		s.punct(c)
	}
}
