// Package fold refuses the expressions goja's compiler folds in time that
// doubles with their length: a chain of &&, || or ?? whose first operand
// is a constant (0 && 0 && 0 ...). To fold a link, the compiler asks
// whether its left side is constant and then evaluates it, and both ask
// the same of the link below: a chain of 24 such links took seconds, one
// of 64 did not end in ten minutes, in one step no interrupt reaches. A
// chain that starts with anything else (a name, a call) is not folded
// and costs nothing more than its length.
package fold

import (
	"fmt"

	"github.com/corral-rt/corral/sandbox/js/internal/astwalk"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// MaxLinks is the longest chain Check passes: folding it takes at most
// 2^16 steps, under 10 ms.
const MaxLinks = 16

// Check refuses prg when it holds a chain of more than MaxLinks logical
// operators starting with a constant.
func Check(prg *ast.Program) error {
	return astwalk.Walk(prg, astwalk.Hooks{Pointer: check})
}

// check refuses a chain past MaxLinks at its first node.
func check(p any) error {
	if b, ok := p.(*ast.BinaryExpression); ok && logical(b) {
		if n := links(b); n > MaxLinks {
			return fmt.Errorf("a chain of %d &&, || or ?? starting with a constant, more than %d "+
				"(the script engine folds it in time that doubles with each link)", n, MaxLinks)
		}
	}
	return nil
}

func logical(b *ast.BinaryExpression) bool {
	return b.Operator == token.LOGICAL_AND || b.Operator == token.LOGICAL_OR || b.Operator == token.COALESCE
}

// links is the length of the logical chain down b's left side, or 0 when
// it does not start with a constant.
func links(b *ast.BinaryExpression) int {
	n := 0
	var e ast.Expression = b
	for {
		l, ok := e.(*ast.BinaryExpression)
		if !ok || !logical(l) {
			break
		}
		n++
		e = l.Left
	}
	if !constant(e, 0) {
		return 0
	}
	return n
}

// constant reports whether goja's compiler may find e constant: literals,
// and unary and binary operators over them.
func constant(e ast.Expression, depth int) bool {
	if depth > 64 {
		return true // deep enough to count as one
	}
	switch t := e.(type) {
	case *ast.NumberLiteral, *ast.StringLiteral, *ast.BooleanLiteral, *ast.NullLiteral, *ast.TemplateLiteral:
		return true
	case *ast.UnaryExpression:
		return constant(t.Operand, depth+1)
	case *ast.BinaryExpression:
		return constant(t.Left, depth+1) && constant(t.Right, depth+1)
	}
	return false
}
