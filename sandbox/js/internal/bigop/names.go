package bigop

import (
	"errors"
	"strconv"

	"github.com/corral-rt/corral/sandbox/js/internal/fnname"
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
			if k, ok := prop.(*ast.PropertyKeyed); ok && k.Computed && fnname.NamedByKey(k.Value) {
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

// unfolded returns key, or key through H.id when goja could fold it into
// a name longer than fnname.MaxChars.
func unfolded(key ast.Expression) ast.Expression {
	if k := keyText(key); k.constant && k.most <= fnname.MaxChars {
		return key
	}
	return helperCall("id", key.Idx0(), key)
}

// keyed reports whether the key of a field may be "name", and gives the
// name a constant key names an anonymous function with when it is.
func keyed(f *ast.FieldDefinition) (maybe bool, name string) {
	if !f.Computed {
		k, ok := f.Key.(*ast.StringLiteral)
		return ok && k.Value == "name", "name"
	}
	switch k := keyText(f.Key); {
	case k.exact:
		return k.text == "name", "name"
	case k.never:
		return false, ""
	}
	return true, "" // goja names a field's function by a constant key only
}

// keyInfo is what the program text shows of a computed key.
type keyInfo struct {
	// constant: goja folds it (a string, number, boolean or null literal,
	// a unary operator's result on one, two of them joined by +), to a
	// string of at most most characters (a number's decimal form is at
	// most about 1.3 times its digits).
	constant bool
	most     int
	// exact: string literals alone (joined by +, to at most
	// fnname.MaxChars characters), making text.
	exact bool
	text  string
	// never: never "name", as it is or holds by + a value whose string is
	// no part of "name" (a number, a boolean, null, or what a unary
	// operator makes: a number, a boolean, a type name, undefined).
	never bool
}

func keyText(e ast.Expression) keyInfo {
	switch t := e.(type) {
	case *ast.StringLiteral:
		return keyInfo{constant: true, most: fnname.Chars(t.Value), exact: true, text: t.Value.String()}
	case *ast.NumberLiteral:
		return keyInfo{constant: true, most: 2*len(t.Literal) + 32, never: true}
	case *ast.BooleanLiteral, *ast.NullLiteral:
		return keyInfo{constant: true, most: 5, never: true}
	case *ast.UnaryExpression:
		k := keyText(t.Operand)
		return keyInfo{constant: k.constant, most: k.most + 32, never: true}
	case *ast.BinaryExpression:
		if t.Operator != token.PLUS {
			break
		}
		a, b := keyText(t.Left), keyText(t.Right)
		k := keyInfo{constant: a.constant && b.constant, most: a.most + b.most, never: a.never || b.never}
		if a.exact && b.exact {
			// a text longer than fnname.MaxChars is not "name", and is not
			// built (a chain of long literals would be built again at
			// every link)
			if k.most <= fnname.MaxChars {
				k.exact, k.text = true, a.text+b.text
			} else {
				k.never = true
			}
		}
		return k
	}
	return keyInfo{}
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
	if f.Computed && fnname.NamedByKey(f.Initializer) {
		f.Key = unfolded(f.Key)
	}
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
