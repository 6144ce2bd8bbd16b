// Package bigop bounds the operators whose result can be far larger
// than their operands, where goja computes the result in one step of its
// VM that no interrupt reaches and no memory guard sees before the
// allocation is made.
//
// BigInt operators: *, ** and << (and >> by a negative count, a left
// shift). goja computes them with math/big: 1n << (2n ** 34n) allocates
// 2 GiB, and 7n ** 80000000n computes for most of a minute.
//
// String concatenation: + and += of two values neither of which is
// bounded by the program text (a literal, or an operator whose result is
// a number or a boolean), and a template literal with two such
// substitutions or more. A loop of s += s doubles a string at every step,
// and one doubling of a 1 GiB string allocates 2 GiB at once: a guard
// that looks at the heap now and then can be late by a doubling or two,
// and on a starved machine by many more. Checked before the copy, the
// string can never be larger than the call's budget. A concatenation
// with a bounded operand grows by at most that operand, step by step,
// which the memory guards see as it goes.
//
// Rewrite replaces each such operator in a parsed program, and each
// compound assignment of one (+=, *=, **=, <<=, >>=), with a call of a
// helper that a VM gets from Install: the helper converts its operands as
// the operator would (ToPrimitive, then ToString or ToNumeric, left then
// right), checks the size of the result before computing it, and applies
// the operator. A compound assignment evaluates its target once: o[k] *= y
// becomes H.ref(o, k)[H.key()] = H.mul(H.val(), y), where ref reads the
// property once and key and val hand back what it read, with no script
// code in between. A template literal `a${x}b${y}` becomes
// H.tpl("a", H.str(x), "b", y, ""): each substitution is converted to a
// string before the next is evaluated, as the language says. The rewrite
// works on the syntax tree: positions, and with them the lines errors
// name, stay the script's own.
//
// Deletion: delete o.name and delete o[k] go through the helper too, which
// refuses to delete a function's own name (package fnname bounds the names
// of functions, and a deleted one would be looked up on a prototype); and
// a derived class with a field that may be named "name" checks that its
// instance is not a function, and computed keys of functions are not
// folded into their names (guardNames).
package bigop

import (
	"errors"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/corral-rt/corral/sandbox/js/internal/astwalk"
	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/token"
	"github.com/dop251/goja/unistring"
)

// Global is the name rewritten code finds the helper under: no script
// can write it as an identifier.
const Global = "\x00big"

// MaxBits is the largest BigInt result, in bits, that an operator may make
// under a memory budget of memoryBytes: memoryBytes/8 bits (a sixty-fourth
// of the budget in bytes), and never more than 2^20 bits (128 KiB). At
// 2^20 bits math/big multiplies in about 9 ms and prints a value in
// decimal in about 190 ms, so every single step stays short.
func MaxBits(memoryBytes int64) int64 { return max(64, min(1<<20, memoryBytes/8)) }

var ops = map[token.Token]string{
	token.MULTIPLY: "mul", token.EXPONENT: "pow", token.SHIFT_LEFT: "shl", token.SHIFT_RIGHT: "shr",
}

// ErrTarget refuses a compound assignment to a target the rewrite does
// not know (none the parser makes: a name, a property, a private field,
// a super property).
var ErrTarget = errors.New("a compound assignment (+=, *=, **=, <<=, >>=) to this target is not supported; " +
	"write the assignment out (x = x + y)")

// Rewrite replaces the operators of the package doc in prg: the string
// concatenations always, the BigInt operators when bigint is set (a
// program that cannot make a BigInt is left without them).
func Rewrite(prg *ast.Program, bigint bool) error {
	r := rewriter{bigint: bigint}
	return astwalk.Walk(prg, astwalk.Hooks{Interface: r.rewrite, Pointer: guardNames})
}

type rewriter struct{ bigint bool }

// rewrite replaces, after the walk went through it, an expression that
// holds one of the operators.
func (r rewriter) rewrite(v reflect.Value) error {
	e, ok := v.Interface().(ast.Expression)
	if !ok || !v.CanSet() {
		return nil
	}
	n, err := r.replace(e)
	if err != nil {
		return err
	}
	if n != nil && reflect.TypeOf(n).AssignableTo(v.Type()) {
		v.Set(reflect.ValueOf(n))
	}
	return nil
}

// replace returns what replaces e, or nil to keep it.
func (r rewriter) replace(e ast.Expression) (ast.Expression, error) {
	switch t := e.(type) {
	case *ast.BinaryExpression:
		if t.Operator == token.PLUS {
			if !bounded(t.Left) && !bounded(t.Right) {
				return helperCall("add", t.Idx0(), t.Left, t.Right), nil
			}
			return nil, nil
		}
		if op, ok := ops[t.Operator]; ok && r.bigint {
			return helperCall(op, t.Idx0(), t.Left, t.Right), nil
		}
	case *ast.AssignExpression:
		if t.Operator == token.PLUS {
			if bounded(t.Right) {
				return nil, nil
			}
			return assign(t, "add")
		}
		op, ok := ops[t.Operator]
		if !ok || !r.bigint {
			return nil, nil
		}
		return assign(t, op)
	case *ast.TemplateLiteral:
		return template(t), nil
	case *ast.UnaryExpression:
		if t.Operator == token.DELETE {
			return deletion(t)
		}
	}
	return nil, nil
}

// bounded reports whether e's value, converted to a string, has a length
// the program text bounds whatever the values it reads: a literal, or an
// operator whose result is a number, a BigInt (whose size package bigop
// bounds), a boolean, undefined or a type name. An unbounded value may be
// a string of any length, or an object whose conversion makes one.
func bounded(e ast.Expression) bool {
	switch t := e.(type) {
	case *ast.NumberLiteral, *ast.StringLiteral, *ast.BooleanLiteral, *ast.NullLiteral:
		return true
	case *ast.TemplateLiteral:
		return t.Tag == nil && len(t.Expressions) == 0
	case *ast.UnaryExpression:
		return true // - + ~ ! typeof void delete ++ --
	case *ast.BinaryExpression:
		switch t.Operator {
		case token.PLUS:
			return false
		case token.LOGICAL_AND, token.LOGICAL_OR, token.COALESCE:
			return bounded(t.Left) && bounded(t.Right)
		}
		return true // arithmetic, bitwise, comparisons, in, instanceof
	case *ast.ConditionalExpression:
		return bounded(t.Consequent) && bounded(t.Alternate)
	case *ast.SequenceExpression:
		return len(t.Sequence) > 0 && bounded(t.Sequence[len(t.Sequence)-1])
	case *ast.AssignExpression:
		switch t.Operator {
		case token.ASSIGN:
			return bounded(t.Right)
		case token.PLUS, token.LOGICAL_AND, token.LOGICAL_OR, token.COALESCE:
			return false
		}
		return true // -= *= and the other arithmetic assignments
	}
	return false
}

// template returns the helper call that replaces an untagged template
// literal with two unbounded substitutions or more, or nil.
func template(t *ast.TemplateLiteral) ast.Expression {
	if t.Tag != nil || len(t.Elements) != len(t.Expressions)+1 {
		return nil
	}
	open := 0
	for _, x := range t.Expressions {
		if !bounded(x) {
			open++
		}
	}
	if open < 2 {
		return nil
	}
	args := make([]ast.Expression, 0, 2*len(t.Expressions)+1)
	for i, x := range t.Expressions {
		el := t.Elements[i]
		args = append(args, &ast.StringLiteral{Idx: el.Idx, Literal: strconv.Quote(el.Parsed.String()), Value: el.Parsed})
		if i < len(t.Expressions)-1 {
			x = helperCall("str", x.Idx0(), x)
		}
		args = append(args, x)
	}
	last := t.Elements[len(t.Elements)-1]
	args = append(args, &ast.StringLiteral{Idx: last.Idx, Literal: strconv.Quote(last.Parsed.String()), Value: last.Parsed})
	call := helperCall("tpl", t.Idx0(), args...)
	call.RightParenthesis = t.Idx1()
	return call
}

func assign(t *ast.AssignExpression, op string) (ast.Expression, error) {
	at := t.Idx0()
	switch l := t.Left.(type) {
	case *ast.Identifier:
		target := *l
		t.Right = helperCall(op, at, &target, t.Right)
	case *ast.DotExpression:
		if _, ok := l.Left.(*ast.SuperExpression); ok {
			// super.x op= y is super.x = H.op(super.x, y): the base and
			// the key are fixed, read once and written once.
			read := *l
			t.Right = helperCall(op, at, &read, t.Right)
			break
		}
		name := &ast.StringLiteral{Idx: at, Literal: strconv.Quote(l.Identifier.Name.String()), Value: l.Identifier.Name}
		t.Left = &ast.DotExpression{Left: helperCall("ref", at, l.Left, name), Identifier: l.Identifier}
		t.Right = helperCall(op, at, helperCall("val", at), t.Right)
	case *ast.BracketExpression:
		if _, ok := l.Left.(*ast.SuperExpression); ok {
			// super[k] op= y is super[H.skey(k)] = H.op(super[H.key()], y):
			// k evaluated and converted to a key once.
			t.Left = &ast.BracketExpression{Left: l.Left, Member: helperCall("skey", at, l.Member),
				LeftBracket: l.LeftBracket, RightBracket: l.RightBracket}
			read := &ast.BracketExpression{Left: l.Left, Member: helperCall("key", at),
				LeftBracket: l.LeftBracket, RightBracket: l.RightBracket}
			t.Right = helperCall(op, at, read, t.Right)
			break
		}
		t.Left = &ast.BracketExpression{Left: helperCall("ref", at, l.Left, l.Member), Member: helperCall("key", at),
			LeftBracket: l.LeftBracket, RightBracket: l.RightBracket}
		t.Right = helperCall(op, at, helperCall("val", at), t.Right)
	case *ast.PrivateDotExpression:
		// o.#x op= y is H.keep(o).#x = H.op(H.kept().#x, y): o evaluated
		// once, and nothing of the script's runs between keep and kept.
		t.Left = &ast.PrivateDotExpression{Left: helperCall("keep", at, l.Left), Identifier: l.Identifier}
		t.Right = helperCall(op, at, &ast.PrivateDotExpression{Left: helperCall("kept", at), Identifier: l.Identifier}, t.Right)
	default:
		return nil, ErrTarget
	}
	t.Operator = token.ASSIGN
	return t, nil
}

// helperCall is Global.name(args...) at position at.
func helperCall(name string, at file.Idx, args ...ast.Expression) *ast.CallExpression {
	end := at
	if len(args) > 0 {
		end = args[len(args)-1].Idx1()
	}
	return &ast.CallExpression{
		Callee: &ast.DotExpression{
			Left:       &ast.Identifier{Name: unistring.String(Global), Idx: at},
			Identifier: ast.Identifier{Name: unistring.String(name), Idx: at},
		},
		LeftParenthesis: at, ArgumentList: args, RightParenthesis: end,
	}
}

// smallChars is the length up to which a concatenation is not checked:
// below it the helper calls no Go.
const smallChars = 4096

// helperSource makes the helper from a check function (op, a, b) that
// stops the call when a BigInt result would be too large, a grow function
// (n) that stops it when a string of n characters would be, and add, the
// Go function that rewritten + calls.
// What it uses of the language it captures when it is made, before any
// script runs: a script that replaces String or Reflect.apply, or a
// prototype's methods, changes nothing here.
const helperSource = `(function (check, grow, add) {
	"use strict";
	const ownKeys = Reflect.ownKeys, apply = Reflect.apply, toStringOf = String, toPrimitive = Symbol.toPrimitive;
	const defineProperty = Reflect.defineProperty, getOwnPropertyDescriptor = Reflect.getOwnPropertyDescriptor;
	let key, value;
	function isObject(x) { return typeof x === "object" ? x !== null : typeof x === "function" }
	// prim is ToPrimitive(x, default) of an object, as + makes it.
	function prim(x) {
		const exotic = x[toPrimitive];
		if (exotic !== undefined && exotic !== null) {
			if (typeof exotic !== "function") throw new TypeError("Symbol.toPrimitive is not a function");
			const r = apply(exotic, x, ["default"]);
			if (isObject(r)) throw new TypeError("Cannot convert object to primitive value");
			return r;
		}
		let m = x.valueOf;
		if (typeof m === "function") { const r = apply(m, x, []); if (!isObject(r)) return r }
		m = x.toString;
		if (typeof m === "function") { const r = apply(m, x, []); if (!isObject(r)) return r }
		throw new TypeError("Cannot convert object to primitive value");
	}
	// str is ToString(x), as a template literal makes it.
	function str(x) {
		if (typeof x === "string") return x;
		if (typeof x === "symbol") throw new TypeError("Cannot convert a Symbol value to a string");
		return toStringOf(x);
	}
	return Object.freeze({
		mul(a, b) { a = -(-a); b = -(-b); if (typeof a === "bigint" && typeof b === "bigint") check(0, a, b); return a * b },
		pow(a, b) { a = -(-a); b = -(-b); if (typeof a === "bigint" && typeof b === "bigint") check(1, a, b); return a ** b },
		shl(a, b) { a = -(-a); b = -(-b); if (typeof a === "bigint" && typeof b === "bigint") check(2, a, b); return a << b },
		shr(a, b) { a = -(-a); b = -(-b); if (typeof a === "bigint" && typeof b === "bigint") check(3, a, b); return a >> b },
		add,
		// addAny is + of any two values: add (in Go) takes two strings or
		// two numbers itself, and hands every other pair here.
		addAny(a, b) {
			if (isObject(a)) a = prim(a);
			if (isObject(b)) b = prim(b);
			if (typeof a === "string" || typeof b === "string") {
				if (typeof a !== "string") a = "" + a;
				if (typeof b !== "string") b = "" + b;
				const n = a.length + b.length;
				if (n > SMALL) grow(n);
			}
			return a + b;
		},
		str,
		tpl(...parts) {
			let n = 0;
			for (let i = 0; i < parts.length; i++) {
				if (typeof parts[i] !== "string") parts[i] = str(parts[i]);
				n += parts[i].length;
			}
			if (n > SMALL) grow(n);
			let s = "";
			for (let i = 0; i < parts.length; i++) s += parts[i];
			return s;
		},
		ref(o, k) { const kk = ownKeys({[k]: 0})[0]; const v = o[kk]; key = kk; value = v; return o },
		key() { const k = key; key = undefined; return k },
		val() { const v = value; value = undefined; return v },
		skey(k) { key = ownKeys({[k]: 0})[0]; return key },
		del(o, k) {
			if (typeof o === "function") {
				k = ownKeys({[k]: 0})[0];
				if (k === "name") throw new TypeError("Cannot delete property 'name' of a function here");
			}
			key = k;
			return o;
		},
		field(o, v, name) {
			if (typeof o === "function") throw new TypeError("a class cannot define its fields on a function here");
			if (name !== undefined && typeof v === "function") {
				const d = getOwnPropertyDescriptor(v, "name");
				if (d !== undefined && d.value === "") defineProperty(v, "name", {value: name, configurable: true});
			}
			return v;
		},
		id(k) { return k },
		keep(o) { value = o; return o },
		kept() { const o = value; value = undefined; return o },
	});
})`

// File is the name the helper's source is compiled under, which its
// stack frames show: no script can be named so, and a runtime that names
// a script position passes over the frames of this file to the script's.
const File = "\x00bigop"

var helperProgram = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile(File, strings.ReplaceAll(helperSource, "SMALL", strconv.Itoa(smallChars)), true)
})

// Install makes the helper in vm. maxBits gives the bound of the running
// call (MaxBits), maxChars the longest string it may make; refuse stops
// the call, and does not return.
func Install(vm *goja.Runtime, maxBits, maxChars func() int64, refuse func()) (goja.Value, error) {
	mk, err := vm.RunProgram(helperProgram())
	if err != nil {
		return nil, err
	}
	f, _ := goja.AssertFunction(mk)
	check := vm.ToValue(func(fc goja.FunctionCall) goja.Value {
		a, _ := fc.Argument(1).Export().(*big.Int)
		b, _ := fc.Argument(2).Export().(*big.Int)
		if a != nil && b != nil && TooLarge(int(fc.Argument(0).ToInteger()), a, b, maxBits()) {
			refuse()
		}
		return goja.Undefined()
	})
	grow := vm.ToValue(func(fc goja.FunctionCall) goja.Value {
		if fc.Argument(0).ToInteger() > maxChars() {
			refuse()
		}
		return goja.Undefined()
	})
	// add takes the pairs a loop adds most, two strings and two numbers,
	// in Go: a call of a script function costs several times a + b.
	var addAny goja.Callable
	add := vm.ToValue(func(fc goja.FunctionCall) goja.Value {
		a, b := fc.Argument(0), fc.Argument(1)
		if sa, ok := a.(goja.String); ok {
			if sb, ok := b.(goja.String); ok {
				if int64(sa.Length())+int64(sb.Length()) > maxChars() {
					refuse()
				}
				return sa.Concat(sb)
			}
		}
		switch ta, tb := a.ExportType(), b.ExportType(); {
		case ta == intType && tb == intType:
			return vm.ToValue(a.ToInteger() + b.ToInteger())
		case (ta == intType || ta == floatType) && (tb == intType || tb == floatType):
			return vm.ToValue(a.ToFloat() + b.ToFloat())
		}
		v, err := addAny(goja.Undefined(), a, b)
		if err != nil {
			panic(err)
		}
		return v
	})
	// Named, toString shows "function add() { [native code] }", not the
	// Go symbol.
	_ = add.(*goja.Object).DefineDataProperty("name", vm.ToValue("add"), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	h, err := f(goja.Undefined(), check, grow, add)
	if err != nil {
		return nil, err
	}
	addAny, _ = goja.AssertFunction(h.ToObject(vm).Get("addAny"))
	return h, nil
}

// The types goja exports its numbers as: an integer (within 2^53) and a
// float.
var (
	intType   = reflect.TypeFor[int64]()
	floatType = reflect.TypeFor[float64]()
)

// TooLarge reports whether op (0 *, 1 **, 2 <<, 3 >>) of a and b would
// make a result of more than maxBits bits.
func TooLarge(op int, a, b *big.Int, maxBits int64) bool {
	la := int64(a.BitLen())
	switch op {
	case 0:
		return la+int64(b.BitLen()) > maxBits
	case 1:
		if b.Sign() <= 0 || la <= 1 && a.Sign() >= 0 || a.CmpAbs(big.NewInt(1)) == 0 {
			return false // a RangeError, or 0, 1 or -1 to any power
		}
		return !b.IsInt64() || b.Int64() > maxBits || la*b.Int64() > maxBits
	case 2, 3:
		n := new(big.Int).Set(b)
		if op == 3 {
			n.Neg(n)
		}
		if a.Sign() == 0 || n.Sign() <= 0 {
			return false
		}
		return !n.IsInt64() || n.Int64() > maxBits || la+n.Int64() > maxBits
	}
	return false
}
