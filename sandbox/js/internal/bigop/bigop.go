// Package bigop bounds the BigInt operators whose result can be far
// larger than their operands: *, ** and << (and >> by a negative count,
// a left shift). goja computes them with math/big in one step of its VM,
// which no interrupt reaches: 1n << (2n ** 34n) allocates 2 GiB, and
// 7n ** 80000000n computes for most of a minute.
//
// Rewrite replaces each such operator in a parsed program, and each
// compound assignment of one (*=, **=, <<=, >>=), with a call of a helper
// that a VM gets from Install: the helper converts its operands as the
// operator would (ToNumeric, left then right), checks the size of a
// BigInt result before computing it, and applies the operator. A
// compound assignment evaluates its target once: o[k] *= y becomes
// H.ref(o, k)[H.key()] = H.mul(H.val(), y), where ref reads the property
// once and key and val hand back what it read, with no script code in
// between. The rewrite works on the syntax tree: positions, and with them
// the lines errors name, stay the script's own.
package bigop

import (
	"errors"
	"math/big"
	"reflect"
	"strconv"
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

// ErrTarget refuses a compound assignment the rewrite cannot make
// evaluate its target once.
var ErrTarget = errors.New("a compound assignment (*=, **=, <<=, >>=) to a private field or a super property " +
	"is not supported; write the assignment out (this.#x = this.#x * y)")

// Rewrite replaces the operators of the package doc in prg, when bigint
// is set (a program that cannot make a BigInt is left as it is).
func Rewrite(prg *ast.Program, bigint bool) error {
	if !bigint {
		return nil
	}
	return astwalk.Walk(prg, astwalk.Hooks{Interface: rewrite})
}

// rewrite replaces, after the walk went through it, an expression that
// holds one of the operators.
func rewrite(v reflect.Value) error {
	e, ok := v.Interface().(ast.Expression)
	if !ok || !v.CanSet() {
		return nil
	}
	r, err := replace(e)
	if err != nil {
		return err
	}
	if r != nil {
		v.Set(reflect.ValueOf(r))
	}
	return nil
}

// replace returns what replaces e, or nil to keep it.
func replace(e ast.Expression) (ast.Expression, error) {
	switch t := e.(type) {
	case *ast.BinaryExpression:
		if op, ok := ops[t.Operator]; ok {
			return helperCall(op, t.Idx0(), t.Left, t.Right), nil
		}
	case *ast.AssignExpression:
		op, ok := ops[t.Operator]
		if !ok {
			return nil, nil
		}
		return assign(t, op)
	}
	return nil, nil
}

func assign(t *ast.AssignExpression, op string) (ast.Expression, error) {
	at := t.Idx0()
	switch l := t.Left.(type) {
	case *ast.Identifier:
		target := *l
		t.Right = helperCall(op, at, &target, t.Right)
	case *ast.DotExpression:
		if _, ok := l.Left.(*ast.SuperExpression); ok {
			return nil, ErrTarget
		}
		name := &ast.StringLiteral{Idx: at, Literal: strconv.Quote(l.Identifier.Name.String()), Value: l.Identifier.Name}
		t.Left = &ast.DotExpression{Left: helperCall("ref", at, l.Left, name), Identifier: l.Identifier}
		t.Right = helperCall(op, at, helperCall("val", at), t.Right)
	case *ast.BracketExpression:
		if _, ok := l.Left.(*ast.SuperExpression); ok {
			return nil, ErrTarget
		}
		t.Left = &ast.BracketExpression{Left: helperCall("ref", at, l.Left, l.Member), Member: helperCall("key", at),
			LeftBracket: l.LeftBracket, RightBracket: l.RightBracket}
		t.Right = helperCall(op, at, helperCall("val", at), t.Right)
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

// helperSource makes the helper from a check function (op, a, b) that
// stops the call when a BigInt result would be too large.
const helperSource = `(function (check) {
	"use strict";
	const ownKeys = Reflect.ownKeys;
	let key, value;
	return Object.freeze({
		mul(a, b) { a = -(-a); b = -(-b); if (typeof a === "bigint" && typeof b === "bigint") check(0, a, b); return a * b },
		pow(a, b) { a = -(-a); b = -(-b); if (typeof a === "bigint" && typeof b === "bigint") check(1, a, b); return a ** b },
		shl(a, b) { a = -(-a); b = -(-b); if (typeof a === "bigint" && typeof b === "bigint") check(2, a, b); return a << b },
		shr(a, b) { a = -(-a); b = -(-b); if (typeof a === "bigint" && typeof b === "bigint") check(3, a, b); return a >> b },
		ref(o, k) { const kk = ownKeys({[k]: 0})[0]; const v = o[kk]; key = kk; value = v; return o },
		key() { return key },
		val() { const v = value; key = value = undefined; return v },
	});
})`

var helperProgram = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile("bigint", helperSource, true)
})

// Install makes the helper in vm. maxBits gives the bound of the running
// call (MaxBits); refuse stops the call, and does not return.
func Install(vm *goja.Runtime, maxBits func() int64, refuse func()) (goja.Value, error) {
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
	return f(goja.Undefined(), check)
}

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
