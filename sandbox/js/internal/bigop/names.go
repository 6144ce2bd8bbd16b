package bigop

import (
	"errors"

	"github.com/dop251/goja/ast"
)

// ErrDelete refuses a delete of an optional chain whose last link is a
// computed key or .name, which the rewrite does not take.
var ErrDelete = errors.New("delete of an optional chain ending in [key] or .name is not supported; " +
	"write the test out (o != null && delete o[k])")

// deletion rewrites delete o.name and delete o[k] so that the helper sees
// the object and the key first: a function's own name is never deleted
// (package fnname, which bounds the names of functions, says why). The
// key is converted once: delete o[k] becomes delete H.del(o, k)[H.key()].
func deletion(t *ast.UnaryExpression) (ast.Expression, error) {
	at := t.Idx0()
	switch o := t.Operand.(type) {
	case *ast.DotExpression:
		if _, ok := o.Left.(*ast.SuperExpression); ok || o.Identifier.Name != "name" {
			return nil, nil
		}
		name := &ast.StringLiteral{Idx: at, Literal: `"name"`, Value: "name"}
		t.Operand = &ast.DotExpression{Left: helperCall("del", at, o.Left, name), Identifier: o.Identifier}
	case *ast.BracketExpression:
		if _, ok := o.Left.(*ast.SuperExpression); ok {
			return nil, nil
		}
		t.Operand = &ast.BracketExpression{Left: helperCall("del", at, o.Left, o.Member), Member: helperCall("key", at),
			LeftBracket: o.LeftBracket, RightBracket: o.RightBracket}
	case *ast.OptionalChain:
		switch x := o.Expression.(type) {
		case *ast.DotExpression:
			if x.Identifier.Name == "name" {
				return nil, ErrDelete
			}
		case *ast.BracketExpression:
			return nil, ErrDelete
		}
		return nil, nil
	default:
		return nil, nil
	}
	return t, nil
}

// guardFields makes a derived class whose instances get a field that may
// be named "name" (a computed key, or the key name) check, before its
// first field, that the instance is not a function: a base constructor
// that returns a function would otherwise have the class define the
// function's name, past every guard of package fnname. The check is a
// private field of a name no script can write, first in the class body.
func guardFields(p any) error {
	c, ok := p.(*ast.ClassLiteral)
	if !ok || c.SuperClass == nil {
		return nil
	}
	for _, e := range c.Body {
		f, ok := e.(*ast.FieldDefinition)
		if !ok || f.Static {
			continue
		}
		if k, ok := f.Key.(*ast.StringLiteral); f.Computed || ok && k.Value == "name" {
			at := f.Idx
			check := &ast.FieldDefinition{Idx: at,
				Key:         &ast.PrivateIdentifier{Identifier: ast.Identifier{Idx: at, Name: "\x00field"}},
				Initializer: helperCall("field", at, &ast.ThisExpression{Idx: at})}
			c.Body = append([]ast.ClassElement{check}, c.Body...)
			return nil
		}
	}
	return nil
}
