package jsscan

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// word scans an identifier or a keyword.
func (s *scanner) word() {
	start := s.i
	for s.i < len(s.src) {
		c := s.src[s.i]
		if c >= 0x80 {
			r, n := utf8.DecodeRuneInString(s.src[s.i:])
			if r == 0xFEFF || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Zs, r) {
				break
			}
			s.i += n
			continue
		}
		if !isIdent(c) {
			break
		}
		s.i++
	}
	if s.i == start { // a lone byte of no token
		s.i++
		s.prev = pOp
		return
	}
	w := s.src[start:s.i]
	if s.prev == pDot {
		s.prev = pOperand
		return
	}
	s.keyword(w)
}

// keyword handles the word w (an identifier unless it is a keyword the
// scan needs to know).
func (s *scanner) keyword(w string) {
	if t := s.top(); t.kind == '{' && t.brace == braceObject {
		if c := s.nextSignificant(); c == ':' || c == '(' {
			// A key or a method of an object literal ({if: x}, {for() {}}),
			// not the keyword.
			s.operandStart()
			s.prev = pOperand
			return
		}
	}
	switch w {
	case "of":
		if t := s.top(); t.kind == '(' && t.ctrl && s.prev == pOperand {
			// for (x of y): an operator, as in, where it follows the
			// binding; elsewhere in a head (for (x = of / 2;;)) a name.
			s.chain()
			s.prev = pOp
			return
		}
	case "yield", "await":
		if c := s.nextSignificant(); c == '/' {
			// An operator before a regular expression, or an identifier
			// divided: which one depends on the function the word is in.
			s.errAt(s.i, "%s followed by / is ambiguous here: write %s (/…/) or (%s) / …", w, w, w)
			return
		}
	}
	switch w {
	case "in", "instanceof":
		s.chain()
		s.prev = pOp
		return
	case "else":
		s.stmtHead()
		s.prev = pStmt
		return
	}
	s.operandStart()
	switch w {
	case "typeof", "void", "delete", "new", "await", "yield":
		s.chain()
		s.prev = pKeyword
	case "return", "throw", "extends", "var", "const":
		s.prev = pKeyword
	case "case", "default":
		s.resetChain()
		s.top().inCase = true
		s.prev = pKeyword
	case "if", "for", "while", "with":
		s.stmtHead()
		s.pendingCtrl = true
		s.prev = pStmt
	case "switch", "catch":
		s.pendingCtrl = true
		s.prev = pStmt
	case "do":
		s.stmtHead()
		s.prev = pStmt
	case "try", "finally":
		s.prev = pStmt
	case "function":
		s.pendingFunc = bodyKind(s.prev == pStmt || (s.noASI && s.asyncStmt))
		s.prev = pKeyword
	case "class":
		s.pendingClass = bodyKind(s.prev == pStmt)
		s.classAt = len(s.stack)
		s.prev = pKeyword
	case "async":
		s.asyncStmt = s.prev == pStmt
		s.prev = pOperand
		s.noASI = true
	default:
		s.prev = pOperand
	}
}

// bodyKind is the kind of the body of a function or class: a
// declaration's is followed by a statement, an expression's by an
// operator.
func bodyKind(declaration bool) byte {
	if declaration {
		return braceBlock
	}
	return braceExpr
}

// assignOps are the assignment operators but =, longest first.
var assignOps = [...]string{
	">>>=", "**=", "<<=", ">>=", "&&=", "||=", "??=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
}

// punct scans a punctuator.
func (s *scanner) punct(c byte) {
	rest := s.src[s.i:]
	for _, op := range assignOps {
		if strings.HasPrefix(rest, op) {
			s.i += len(op)
			s.chain()
			s.prev = pOp
			return
		}
	}
	switch {
	case strings.HasPrefix(rest, "=>"):
		s.i += 2
		s.chain()
		s.prev = pArrow
	case strings.HasPrefix(rest, "**"):
		s.i += 2
		s.chain()
		s.prev = pOp
	case strings.HasPrefix(rest, "..."):
		s.i += 3
		s.chain()
		s.prev = pOp
	case strings.HasPrefix(rest, "?.") && !isDigit(s.at(s.i+2)):
		s.i += 2
		s.chain()
		s.prev = pDot
	case strings.HasPrefix(rest, "++"), strings.HasPrefix(rest, "--"):
		s.incDec()
	case strings.HasPrefix(rest, "==="), strings.HasPrefix(rest, "!=="), strings.HasPrefix(rest, ">>>"):
		s.i += 3
		s.chain()
		s.prev = pOp
	case hasAny(rest, "==", "!=", "<=", ">=", "&&", "||", "??", "<<", ">>"):
		s.i += 2
		s.chain()
		s.prev = pOp
	default:
		s.i++
		s.single(c)
	}
}

// incDec scans ++ or --: postfix after an operand on the same line,
// prefix otherwise.
func (s *scanner) incDec() {
	if (s.prev == pOperand || s.prev == pPostfix) && !s.nl {
		s.i += 2
		s.prev = pPostfix
		return
	}
	s.operandStart()
	s.i += 2
	s.chain()
	s.prev = pOp
}

// single handles a one-byte punctuator c (s.i is past it).
func (s *scanner) single(c byte) {
	switch c {
	case '(':
		s.member()
		l := level{kind: '(', ctrl: s.pendingCtrl, fn: s.pendingFunc}
		s.pendingCtrl, s.pendingFunc = false, 0
		s.push(l)
		s.prev = pOp
	case ')':
		s.i--
		l, ok := s.pop('(')
		s.i++
		switch {
		case !ok:
		case l.ctrl:
			s.prev = pStmt
		case l.fn != 0:
			s.prev = pParams
			s.pendingFunc = l.fn
		default:
			s.prev = pOperand
		}
	case '[':
		s.member()
		s.push(level{kind: '['})
		s.prev = pOp
	case ']':
		s.i--
		s.pop('[')
		s.i++
		s.prev = pOperand
	case '{':
		s.openBrace()
	case '}':
		s.closeBrace()
	case ';':
		s.endStatement()
	case ',':
		s.resetChain()
		s.prev = pOp
	case '?':
		s.top().ternary++
		s.chain()
		s.prev = pOp
	case ':':
		s.colon()
	case '.':
		s.chain()
		s.prev = pDot
	case '=':
		s.chain()
		s.prev = pOp
	case '!', '~':
		s.operandStart()
		s.chain()
		s.prev = pOp
	default: // a binary operator, or + - as a prefix: each makes a level
		s.chain()
		s.prev = pOp
	}
}

// member counts a call, an index or a tagged template: after an operand,
// each makes a level of the syntax tree (f()()(), a[0][0]), which goja's
// compiler descends recursively.
func (s *scanner) member() {
	if s.prev == pOperand || s.prev == pPostfix {
		s.chain()
	}
}

func (s *scanner) openBrace() {
	var kind byte
	switch {
	case s.prev == pParams:
		kind = s.pendingFunc
	case s.pendingClass != 0 && s.classAt == len(s.stack):
		kind = s.pendingClass
	case s.prev == pArrow:
		// An arrow function's body: an operand of the expression around
		// it, whose chain its } does not end.
		kind = braceArrow
	case s.prev == pStmt || s.prev == pOperand || s.prev == pPostfix:
		kind = braceBlock
	default:
		kind = braceObject
	}
	if s.prev == pOperand || s.prev == pPostfix {
		s.operandStart()
	}
	s.pendingFunc, s.pendingClass, s.pendingCtrl = 0, 0, false
	s.push(level{kind: '{', brace: kind})
	if kind == braceObject {
		s.prev = pOp
	} else {
		s.prev = pStmt
	}
}

func (s *scanner) closeBrace() {
	if s.top().kind == '$' {
		s.i--
		s.pop('$')
		s.i++
		s.template()
		return
	}
	s.i--
	l, ok := s.pop('{')
	s.i++
	switch {
	case !ok:
	case l.brace == braceBlock:
		s.endStatement()
	case l.brace == braceArrow:
		s.prev = pOperand
		s.arrowEnd = true
	default:
		s.prev = pOperand
	}
}

// colon handles ':': the second half of ?, an object literal's value, a
// case clause's end or a label.
func (s *scanner) colon() {
	t := s.top()
	switch {
	case t.ternary > 0:
		t.ternary--
		s.prev = pOp
	case t.kind == '{' && t.brace == braceObject:
		s.prev = pOp
	case t.inCase:
		t.inCase = false
		s.endStatement()
	default:
		s.stmtHead()
		s.prev = pStmt
	}
}

// hasAny reports whether s starts with one of the two-byte operators ops.
func hasAny(s string, ops ...string) bool {
	for _, op := range ops {
		if strings.HasPrefix(s, op) {
			return true
		}
	}
	return false
}

// nextSignificant is the first byte after s.i that is neither white space
// nor in a comment (0 at the end).
func (s *scanner) nextSignificant() byte {
	for j := s.i; j < len(s.src); {
		switch c := s.src[j]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			j++
		case c == '/' && j+1 < len(s.src) && s.src[j+1] == '/':
			k := strings.IndexByte(s.src[j:], '\n')
			if k < 0 {
				return 0
			}
			j += k
		case c == '/' && j+1 < len(s.src) && s.src[j+1] == '*':
			k := strings.Index(s.src[j+2:], "*/")
			if k < 0 {
				return 0
			}
			j += k + 4
		default:
			return c
		}
	}
	return 0
}
