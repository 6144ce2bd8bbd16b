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
	"reflect"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/token"
)

// MaxLinks is the longest chain Check passes: folding it takes at most
// 2^16 steps, under 10 ms.
const MaxLinks = 16

var fileType = reflect.TypeOf((*file.File)(nil))

// Check refuses prg when it holds a chain of more than MaxLinks logical
// operators starting with a constant.
func Check(prg *ast.Program) error {
	return walk(reflect.ValueOf(prg), map[any]bool{})
}

func walk(v reflect.Value, seen map[any]bool) error {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return walk(v.Elem(), seen)
	case reflect.Pointer:
		if v.IsNil() || v.Type() == fileType || seen[v.Interface()] {
			return nil
		}
		seen[v.Interface()] = true
		if b, ok := v.Interface().(*ast.BinaryExpression); ok && logical(b) {
			if n := links(b); n > MaxLinks {
				return fmt.Errorf("a chain of %d &&, || or ?? starting with a constant, more than %d "+
					"(the script engine folds it in time that doubles with each link)", n, MaxLinks)
			}
		}
		return walk(v.Elem(), seen)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if err := walk(v.Field(i), seen); err != nil {
				return err
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if err := walk(v.Index(i), seen); err != nil {
				return err
			}
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
