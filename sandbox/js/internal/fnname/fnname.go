// Package fnname bounds the names of functions.
//
// goja writes an error's stack, on its first read, in one step no
// interrupt reaches: a line for every frame it captured when the error
// was made, each with the name of that frame's function. The name of a
// script function is the one its source gives it; the name of a native
// function (a built-in, a bound function) is its name property as it was
// when the error was made. A script that renamed a bound function to a
// string of 32 MiB and recursed through it 256 times made an error whose
// stack was 8 GiB, allocated at its first read. With every name at most
// MaxChars characters, a stack is at most MaxChars times its depth.
//
// Check refuses a program that names a function with more than MaxChars
// characters (a name, a literal property key or a private name). Install
// guards the ways a script can give a function a longer name at run time:
// Object.defineProperty, Object.defineProperties and Reflect.defineProperty
// of a function's name take a string of at most MaxChars characters (or a
// number, a boolean, null or undefined) that stays read-only and not
// enumerable (JSON.parse's reviver defines and deletes enumerable keys), and
// Function.prototype.bind cuts the name of the function it makes ("bound "
// and the target's) to MaxChars. A function's own name cannot be deleted
// (Reflect.deleteProperty answers false; the delete operator is rewritten
// by package bigop to ask the same), so no name is ever looked up on a
// prototype a script can change.
package fnname

import (
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/corral-rt/corral/sandbox/js/internal/astwalk"
	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/unistring"
)

// MaxChars is the longest name a function may have, in characters.
const MaxChars = 1024

// Check refuses prg when it names a function with more than MaxChars
// characters: an identifier (a function, class, variable or parameter
// name, wherever the tree holds one, a shorthand pattern's included), a
// private name (# and the identifier), or a literal key of a method or of
// a property whose value is a function or a class (a BigInt key counted
// in decimal, as it names the function).
func Check(prg *ast.Program) error {
	return astwalk.Walk(prg, astwalk.Hooks{Pointer: func(p any) error {
		n, at := nameLen(p)
		if n > MaxChars {
			return fmt.Errorf("%sa name of %d characters, more than %d (a function's name is written into every "+
				"stack trace that passes through it)", where(prg, at), n, MaxChars)
		}
		return nil
	}})
}

var (
	identType   = reflect.TypeFor[ast.Identifier]()
	privateType = reflect.TypeFor[ast.PrivateIdentifier]()
)

// nameLen is the length of the longest name the node p points to gives a
// function, and where it is.
func nameLen(p any) (n int, at file.Idx) {
	switch t := p.(type) {
	case *ast.Identifier:
		return Chars(t.Name), t.Idx
	case *ast.PrivateIdentifier:
		return Chars(t.Name) + 1, t.Idx
	case *ast.MethodDefinition:
		if !t.Computed {
			return keyLen(t.Key), t.Idx
		}
	case *ast.PropertyKeyed:
		if !t.Computed && NamedByKey(t.Value) {
			return keyLen(t.Key), t.Key.Idx0()
		}
	case *ast.FieldDefinition:
		if !t.Computed && NamedByKey(t.Initializer) {
			return keyLen(t.Key), t.Idx
		}
	}
	// identifiers a node holds by value (a shorthand property's name, a
	// member's), which the walk does not point to
	v := reflect.ValueOf(p).Elem()
	if v.Kind() != reflect.Struct {
		return 0, 0
	}
	for i := range v.NumField() {
		switch f := v.Field(i); f.Type() {
		case identType:
			id := f.Interface().(ast.Identifier)
			if c := Chars(id.Name); c > n {
				n, at = c, id.Idx
			}
		case privateType:
			id := f.Interface().(ast.PrivateIdentifier)
			if c := Chars(id.Name) + 1; c > n {
				n, at = c, id.Idx
			}
		}
	}
	return n, at
}

// Chars is the length of s in UTF-16 code units, as the language counts.
func Chars(s unistring.String) int {
	str := s.String()
	n := 0
	for _, r := range str {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// keyLen is the length of the name a literal property key gives: a
// string's, or a number's in decimal (a BigInt literal in hexadecimal is
// longer so; any other number is at most 25 characters).
func keyLen(k ast.Expression) int {
	switch t := k.(type) {
	case *ast.StringLiteral:
		return Chars(t.Value)
	case *ast.NumberLiteral:
		if b, ok := t.Value.(*big.Int); ok {
			return len(b.String())
		}
		return min(len(t.Literal), 25)
	}
	return 0
}

// NamedByKey reports whether e is a function or a class, which takes its
// name from the key it is the value of.
func NamedByKey(e ast.Expression) bool {
	switch e.(type) {
	case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral, *ast.ClassLiteral:
		return true
	}
	return false
}

func where(prg *ast.Program, at file.Idx) string {
	if prg.File == nil || at < file.Idx(prg.File.Base()) {
		return ""
	}
	p := prg.File.Position(int(at) - prg.File.Base())
	return fmt.Sprintf("line %d, column %d: ", p.Line, p.Column)
}

// Wrap replaces the method name of obj with g, which gets the original:
// the sandbox's way of guarding a built-in.
type Wrap func(obj *goja.Object, name string, g func(orig goja.Callable, fc goja.FunctionCall) goja.Value)

// guard holds what the wrappers use of the language, taken when they are
// installed, before any script runs.
type guard struct {
	vm                         *goja.Runtime
	has, get, ownKeys, ownDesc goja.Callable
	toKey                      goja.Callable
}

// toKeySource converts a value to a property key as a property access
// does, once (an object's toString or Symbol.toPrimitive runs once).
const toKeySource = `(function (ownKeys) { "use strict"; return function toKey(k) { return ownKeys({[k]: 0})[0] } })`

// File is the name the key conversion is compiled under.
const File = "\x00fnname"

var toKeyProgram = sync.OnceValue(func() *goja.Program { return goja.MustCompile(File, toKeySource, true) })

// Install guards vm's built-ins that can give a function a name or take
// it away, through wrap. It runs before any script does.
func Install(vm *goja.Runtime, wrap Wrap) error {
	reflect := vm.Get("Reflect").(*goja.Object)
	g := &guard{vm: vm}
	for _, f := range []struct {
		dst  *goja.Callable
		name string
	}{{&g.has, "has"}, {&g.get, "get"}, {&g.ownKeys, "ownKeys"}, {&g.ownDesc, "getOwnPropertyDescriptor"}} {
		fn, ok := goja.AssertFunction(reflect.Get(f.name))
		if !ok {
			return fmt.Errorf("fnname: Reflect.%s is not a function", f.name)
		}
		*f.dst = fn
	}
	mk, err := vm.RunProgram(toKeyProgram())
	if err != nil {
		return err
	}
	f, _ := goja.AssertFunction(mk)
	k, err := f(goja.Undefined(), reflect.Get("ownKeys"))
	if err != nil {
		return err
	}
	g.toKey, _ = goja.AssertFunction(k)

	object := vm.Get("Object").(*goja.Object)
	wrap(object, "defineProperty", g.defineProperty(false))
	wrap(reflect, "defineProperty", g.defineProperty(true))
	wrap(object, "defineProperties", g.defineProperties)
	wrap(reflect, "deleteProperty", g.deleteProperty)
	wrap(vm.Get("Function").(*goja.Object).Get("prototype").(*goja.Object), "bind", g.bind)
	return nil
}

func (g *guard) call(f goja.Callable, this goja.Value, args ...goja.Value) goja.Value {
	v, err := f(this, args...)
	if err != nil {
		panic(err)
	}
	return v
}

func callable(v goja.Value) bool {
	_, ok := goja.AssertFunction(v)
	return ok
}

// key converts k to a property key, running a script's conversion once.
func (g *guard) key(k goja.Value) goja.Value {
	switch k.(type) {
	case goja.String, *goja.Symbol:
		return k
	}
	if _, ok := k.(*goja.Object); ok {
		return g.call(g.toKey, goja.Undefined(), k)
	}
	if k == nil {
		k = goja.Undefined()
	}
	return g.vm.ToValue(k.String())
}

func isName(key goja.Value) bool {
	s, ok := key.(goja.String)
	return ok && s.String() == "name"
}

// args returns a copy of fc's arguments, at least n of them.
func args(fc goja.FunctionCall, n int) []goja.Value {
	out := slices.Clone(fc.Arguments)
	for len(out) < n {
		out = append(out, goja.Undefined())
	}
	return out
}

// descFields are the fields of a property descriptor, in the order the
// language reads them.
var descFields = [...]string{"enumerable", "configurable", "value", "writable", "get", "set"}

// snapshot reads a property descriptor once, as the language does, into a
// plain object without a prototype, and says why a function's name may
// not be so ("" when it may). A descriptor that is not an object is kept
// (the original refuses it).
func (g *guard) snapshot(d goja.Value) (goja.Value, string) {
	obj, ok := d.(*goja.Object)
	if !ok {
		return d, ""
	}
	snap := g.vm.NewObject()
	_ = snap.SetPrototype(nil)
	for _, f := range descFields {
		name := g.vm.ToValue(f)
		if !g.call(g.has, goja.Undefined(), obj, name).ToBoolean() {
			continue
		}
		_ = snap.Set(f, g.call(g.get, goja.Undefined(), obj, name))
	}
	return snap, refusal(snap)
}

// refusal says why the descriptor snap may not set a function's name.
func refusal(snap *goja.Object) string {
	if snap.Get("get") != nil || snap.Get("set") != nil {
		return "a function's name cannot be a getter or a setter here"
	}
	if w := snap.Get("writable"); w != nil && w.ToBoolean() {
		return "a function's name cannot be made writable here"
	}
	// enumerable, JSON.parse's reviver would define or delete it
	if e := snap.Get("enumerable"); e != nil && e.ToBoolean() {
		return "a function's name cannot be made enumerable here"
	}
	v := snap.Get("value")
	switch t := v.(type) {
	case nil:
		return ""
	case goja.String:
		if n := t.Length(); n > MaxChars {
			return fmt.Sprintf("a function's name of %d characters, more than %d", n, MaxChars)
		}
		return ""
	case *goja.Object, *goja.Symbol:
		return "a function's name must be a string here"
	}
	if goja.IsUndefined(v) || goja.IsNull(v) {
		return ""
	}
	switch v.Export().(type) {
	case bool, int64, float64:
		return ""
	}
	return "a function's name must be a string here" // a BigInt
}

// defineProperty guards Object.defineProperty (a refusal is a TypeError)
// and Reflect.defineProperty (a refusal is false).
func (g *guard) defineProperty(reflect bool) func(goja.Callable, goja.FunctionCall) goja.Value {
	return func(orig goja.Callable, fc goja.FunctionCall) goja.Value {
		if !callable(fc.Argument(0)) {
			return g.call(orig, fc.This, fc.Arguments...)
		}
		a := args(fc, 3)
		a[1] = g.key(a[1])
		if isName(a[1]) {
			var why string
			if a[2], why = g.snapshot(a[2]); why != "" {
				if reflect {
					return g.vm.ToValue(false)
				}
				panic(g.vm.NewTypeError(why))
			}
		}
		return g.call(orig, fc.This, a...)
	}
}

// defineProperties guards Object.defineProperties on a function: every
// descriptor is read once, before any is defined, and the original gets
// the copies, so that what was checked is what is defined.
func (g *guard) defineProperties(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if !callable(fc.Argument(0)) {
		return g.call(orig, fc.This, fc.Arguments...)
	}
	a := args(fc, 2)
	props := a[1].ToObject(g.vm)
	out := g.vm.NewObject()
	_ = out.SetPrototype(nil)
	keys := g.call(g.ownKeys, goja.Undefined(), props).(*goja.Object)
	n := keys.Get("length").ToInteger()
	for i := range n {
		k := keys.Get(strconv.FormatInt(i, 10))
		own := g.call(g.ownDesc, goja.Undefined(), props, k)
		if d, ok := own.(*goja.Object); !ok || !d.Get("enumerable").ToBoolean() {
			continue
		}
		d, why := g.snapshot(g.call(g.get, goja.Undefined(), props, k))
		if why != "" && isName(k) {
			panic(g.vm.NewTypeError(why))
		}
		if sym, ok := k.(*goja.Symbol); ok {
			_ = out.SetSymbol(sym, d)
		} else {
			_ = out.Set(k.String(), d)
		}
	}
	a[1] = out
	return g.call(orig, fc.This, a...)
}

// deleteProperty guards Reflect.deleteProperty: a function's name is not
// deleted (false, as for a property that cannot be).
func (g *guard) deleteProperty(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	if !callable(fc.Argument(0)) {
		return g.call(orig, fc.This, fc.Arguments...)
	}
	a := args(fc, 2)
	a[1] = g.key(a[1])
	if isName(a[1]) {
		return g.vm.ToValue(false)
	}
	return g.call(orig, fc.This, a...)
}

// bind guards Function.prototype.bind: the name of the function it makes
// ("bound " and the target's) is cut to MaxChars characters. A bound
// function's name is derived, not chosen, so it is cut rather than
// refused: a loop that binds what it bound keeps running.
func (g *guard) bind(orig goja.Callable, fc goja.FunctionCall) goja.Value {
	res := g.call(orig, fc.This, fc.Arguments...)
	if o, ok := res.(*goja.Object); ok {
		if s, ok := o.Get("name").(goja.String); ok && s.Length() > MaxChars {
			_ = o.DefineDataProperty("name", s.Substring(0, MaxChars), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		}
	}
	return res
}
