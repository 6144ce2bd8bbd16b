package bigop

import (
	"errors"
	"strconv"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
	"github.com/dop251/goja/unistring"
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

// guardNames rewrites what would let a function be named past package
// fnname's bounds.
//
// A computed key of a method, or of a property or a field whose value is
// a function or a class, is passed through H.id unless it is a constant
// the program text shows to be short: goja folds a constant key (a
// literal, literals joined by +, and a key eval builds from a string of
// any length) into the name its compiler gives the function, which every
// stack trace through it writes out. Through a call the key names the
// function at run time only (goja names a field's function by a constant
// key only, so a field keeps the name "" under a long one).
//
// A derived class whose instances get a field that may be named "name" (a
// computed key, or the key name) checks, as that field is initialized,
// that the instance is not a function: a base constructor that returns a
// function would otherwise have the class define the function's name past
// every guard. The field's value goes through H.field(this, value, key),
// which gives an anonymous function the name a literal key gives it.
func guardNames(p any) error {
	switch t := p.(type) {
	case *ast.ObjectLiteral:
		for _, prop := range t.Value {
			if k, ok := prop.(*ast.PropertyKeyed); ok && k.Computed && function(k.Value) {
				k.Key = unfolded(k.Key)
			}
		}
	case *ast.ClassLiteral:
		for _, e := range t.Body {
			switch f := e.(type) {
			case *ast.MethodDefinition:
				if f.Computed {
					f.Key = unfolded(f.Key)
				}
			case *ast.FieldDefinition:
				guardField(f, t.SuperClass != nil)
			}
		}
	}
	return nil
}

// MaxFoldedKey is the longest constant computed key of a function the
// rewrite leaves for goja to fold into its name (package fnname's
// MaxChars).
const MaxFoldedKey = 1024

// unfolded returns key, or key through H.id when goja could fold it into
// a name longer than MaxFoldedKey.
func unfolded(key ast.Expression) ast.Expression {
	if n, ok := constLen(key); ok && n <= MaxFoldedKey {
		return key
	}
	return helperCall("id", key.Idx0(), key)
}

// constLen bounds the length of the string a constant key folds to: a
// string literal, a number literal (whose decimal form is at most about
// 1.3 times its digits), a boolean or null, a unary operator's result on
// one of them, or two of them joined by +.
func constLen(e ast.Expression) (int, bool) {
	switch t := e.(type) {
	case *ast.StringLiteral:
		return len(t.Value), true
	case *ast.NumberLiteral:
		return 2*len(t.Literal) + 32, true
	case *ast.BooleanLiteral, *ast.NullLiteral:
		return 5, true
	case *ast.UnaryExpression:
		// a number of a constant, a boolean, a type name or undefined; a
		// BigInt's digits: at most as long as its literal, and its sign
		if n, ok := constLen(t.Operand); ok {
			return n + 32, true
		}
	case *ast.BinaryExpression:
		if t.Operator == token.PLUS {
			a, ok := constLen(t.Left)
			b, ok2 := constLen(t.Right)
			return a + b, ok && ok2
		}
	}
	return 0, false
}

// keyed reports whether the key of a field may be "name", and gives the
// name a constant key names an anonymous function with when it is.
func keyed(f *ast.FieldDefinition) (maybe bool, name string) {
	if !f.Computed {
		k, ok := f.Key.(*ast.StringLiteral)
		return ok && k.Value == "name", "name"
	}
	s, exact, never := keyText(f.Key)
	switch {
	case exact:
		return s == "name", "name"
	case never:
		return false, ""
	}
	return true, "" // goja names a field's function by a constant key only
}

// keyText is what the program text shows of a computed key: the string
// it is, when it is string literals joined by + (exact); or that it is
// never "name" (never), when it is or holds by + a value whose string is
// no part of "name": a number, a boolean, null, or what a unary operator
// makes (a number, a boolean, a type name, undefined).
func keyText(e ast.Expression) (s string, exact, never bool) {
	switch t := e.(type) {
	case *ast.StringLiteral:
		return t.Value.String(), true, false
	case *ast.NumberLiteral, *ast.BooleanLiteral, *ast.NullLiteral, *ast.UnaryExpression:
		return "", false, true
	case *ast.BinaryExpression:
		if t.Operator == token.PLUS {
			a, ea, na := keyText(t.Left)
			b, eb, nb := keyText(t.Right)
			if ea && eb && len(a)+len(b) <= MaxFoldedKey {
				return a + b, true, false
			}
			return "", false, na || nb
		}
	}
	return "", false, false
}

func guardField(f *ast.FieldDefinition, derived bool) {
	if maybe, name := keyed(f); derived && !f.Static && maybe {
		at := f.Idx
		value := f.Initializer
		if value == nil { // void 0: a scope may have its own undefined
			value = &ast.UnaryExpression{Idx: at, Operator: token.VOID, Operand: &ast.NumberLiteral{Idx: at, Literal: "0", Value: int64(0)}}
		}
		args := []ast.Expression{&ast.ThisExpression{Idx: at}, value}
		if name != "" && anonymous(f.Initializer) {
			args = append(args, &ast.StringLiteral{Idx: at, Literal: strconv.Quote(name), Value: unistring.NewFromString(name)})
		}
		f.Initializer = helperCall("field", at, args...)
	}
	if f.Computed && function(f.Initializer) {
		f.Key = unfolded(f.Key)
	}
}

// function reports whether e is a function or a class.
func function(e ast.Expression) bool {
	switch e.(type) {
	case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral, *ast.ClassLiteral:
		return true
	}
	return false
}

// anonymous reports whether e is a function or a class without a name of
// its own, which a field names after its key.
func anonymous(e ast.Expression) bool {
	switch t := e.(type) {
	case *ast.FunctionLiteral:
		return t.Name == nil
	case *ast.ArrowFunctionLiteral:
		return true
	case *ast.ClassLiteral:
		return t.Name == nil
	}
	return false
}
