package js

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// How the walk tells a Go-backed value from a JavaScript one. goja keeps
// an object's implementation in the unexported field Object.self; the walk
// reads that field's dynamic type with reflect (read-only) and:
//
//   - fails on every implementation that wraps a Go value: goja names them
//     objectGo* (struct, map, slice and array wrappers), wrappedFuncObject
//     (a Go function of any signature made callable) and dynamicObject /
//     dynamicArray (Go-implemented objects);
//   - fails on an implementation it does not know, so that a goja upgrade
//     that adds one is looked at rather than let through;
//   - fails on a function whose Export type is not one of the two native
//     signatures (func(FunctionCall) Value, func(ConstructorCall) *Object)
//     or a proxy: hand-written functions are fine, a reflected Go function
//     is not.
var jsNativeImpls = map[string]bool{
	"*goja.baseObject": true, "*goja.templatedObject": true, "*goja.guardedObject": true,
	"*goja.arrayObject": true, "*goja.templatedArrayObject": true, "*goja.sparseArrayObject": true,
	"*goja.funcObject": true, "*goja.nativeFuncObject": true, "*goja.templatedFuncObject": true,
	"*goja.arrowFuncObject": true, "*goja.classFuncObject": true, "*goja.methodFuncObject": true,
	"*goja.boundFuncObject": true, "*goja.proxyObject": true, "*goja.dateObject": true,
	"*goja.regexpObject": true, "*goja.mapObject": true, "*goja.setObject": true,
	"*goja.weakMapObject": true, "*goja.weakSetObject": true, "*goja.primitiveValueObject": true,
	"*goja.stringObject": true, "*goja.typedArrayObject": true, "*goja.arrayBufferObject": true,
	"*goja.dataViewObject": true, "*goja.Promise": true, "*goja.generatorObject": true,
	"*goja.argumentsObject": true, "*goja.errorObject": true, "*goja.asyncFuncObject": true,
	"*goja.generatorFuncObject": true, "*goja.asyncGeneratorFuncObject": true,
	"*goja.arrayIterObject": true, "*goja.stringIterObject": true, "*goja.mapIterObject": true,
	"*goja.setIterObject": true, "*goja.regexpStringIterObject": true,
}

var nativeFuncTypes = map[reflect.Type]bool{
	reflect.TypeOf(func(goja.FunctionCall) goja.Value { return nil }):      true,
	reflect.TypeOf(func(goja.ConstructorCall) *goja.Object { return nil }): true,
	// A proxy (of a guarded constructor) exports as goja.Proxy; what it
	// forwards to is walked through its properties.
	reflect.TypeOf(goja.Proxy{}): true,
}

func implOf(o *goja.Object) string {
	v := reflect.ValueOf(o).Elem().FieldByName("self")
	if !v.IsValid() || v.IsNil() {
		return "<none>"
	}
	return v.Elem().Type().String()
}

// goBacked reports why o is (or may be) backed by a Go value, or "".
func goBacked(o *goja.Object) string {
	impl := implOf(o)
	switch {
	case strings.Contains(impl, "objectGo"), strings.Contains(impl, "wrappedFunc"), strings.Contains(impl, "dynamic"):
		return "wraps a Go value (" + impl + ")"
	case !jsNativeImpls[impl]:
		return "unknown implementation " + impl
	}
	if _, ok := goja.AssertFunction(o); ok {
		if t := o.ExportType(); !nativeFuncTypes[t] {
			return fmt.Sprintf("a Go function of type %v", t)
		}
	}
	return ""
}

// walker visits every object reachable from its roots: own properties
// (string and symbol keys, enumerable or not), accessors' getter and
// setter functions (read from descriptors, never called) and prototypes.
type walker struct {
	vm      *goja.Runtime
	desc    goja.Callable
	seen    map[*goja.Object]string
	reports []string
}

func newWalker(vm *goja.Runtime) *walker {
	desc, _ := goja.AssertFunction(vm.Get("Object").ToObject(vm).Get("getOwnPropertyDescriptor"))
	return &walker{vm: vm, desc: desc, seen: map[*goja.Object]string{}}
}

func (w *walker) walk(path string, v goja.Value) {
	o, ok := v.(*goja.Object)
	if !ok || o == nil {
		return
	}
	if _, done := w.seen[o]; done {
		return
	}
	w.seen[o] = path
	if why := goBacked(o); why != "" {
		w.reports = append(w.reports, path+": "+why)
	}
	keys := []goja.Value{}
	for _, k := range o.GetOwnPropertyNames() {
		keys = append(keys, w.vm.ToValue(k))
	}
	for _, s := range o.Symbols() {
		keys = append(keys, s)
	}
	for _, k := range keys {
		d, err := w.desc(goja.Undefined(), o, k)
		if err != nil {
			w.reports = append(w.reports, fmt.Sprintf("%s[%s]: descriptor: %v", path, k, err))
			continue
		}
		if dobj, ok := d.(*goja.Object); ok {
			for _, part := range []string{"value", "get", "set"} {
				w.walk(fmt.Sprintf("%s[%s](%s)", path, k, part), dobj.Get(part))
			}
		}
	}
	if p := o.Prototype(); p != nil {
		w.walk(path+".__proto__", p)
	}
}

// walkABI answers the host functions the walk calls.
type walkABI struct{}

func (walkABI) Functions() []string { return []string{"drainSteer", "log", "now", "random"} }

func (walkABI) Call(_ context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
	switch name {
	case "now":
		return json.RawMessage(`{"unix_ms": 1700000000000, "iso": "2023-11-14T22:13:20.000Z"}`), nil
	case "random":
		return json.RawMessage(`0.5`), nil
	case "drainSteer":
		return json.RawMessage(`[{"role":"user","parts":[{"type":"text","text":"hi"}]}]`), nil
	}
	return json.RawMessage(`null`), nil
}

// setUpCall builds the VM an invocation's script runs in, with every
// global installed, without running a script: a global object of the
// call's own with a config, or the realm's shared one (shared) without.
func setUpCall(t *testing.T, rt *Runtime, shared bool) *call {
	t.Helper()
	board := agent.NewBoard()
	board.Vars["v"] = map[string]any{"list": []any{1.0, "two"}, "at": "2024-01-01T00:00:00Z"}
	board.Append(agent.MainChannel, message.NewTextMessage(message.RoleUser, "hello"))
	inv := sandbox.Invocation{Node: "n", Type: "script", Board: *board, ABI: walkABI{},
		Config: map[string]any{"nested": map[string]any{"k": []any{true}}},
		Run:    sandbox.RunInfo{RunID: "r"}, Parallel: func(string, string) bool { return false }}
	if shared {
		inv.Config = nil
	}
	c, err := rt.fresh("")
	require.NoError(t, err)
	c.bind(context.Background(), "walk", "n", rt.Limits())
	t.Cleanup(c.cancel)
	ex := c.vm.Try(func() { c.installGlobals(inv, shared) })
	require.Nil(t, ex)
	return c
}

// Every value a script can reach from its globals, and from what the
// globals' functions return, is JavaScript: nothing is backed by a Go
// value. The walk is described at jsNativeImpls.
// REF 9.5
func TestNoGoValueReachable(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			t.Parallel()
			walkGlobals(t, shared)
		})
	}
}

func walkGlobals(t *testing.T, shared bool) {
	rt, err := New(Options{})
	require.NoError(t, err)
	defer rt.Close()
	c := setUpCall(t, rt, shared)
	w := newWalker(c.vm)
	w.walk("globalThis", c.vm.GlobalObject())
	results, err := c.vm.RunString(`[
		board.getVars(), board.getVar("v"), board.channel(board.MAIN_CHANNEL), board.resolve("${board.v}"),
		host.now(), host.drainSteer(), new Date(), Math.random(), run, node, config, signal, parallel,
		(() => { try { board.setVar("__x", 1) } catch (e) { return e } })(),
		(function () { return this })(), Function("return this")(), (function(){}).constructor,
		[][Symbol.iterator](), ""[Symbol.iterator](), new Proxy({}, {}), new Uint8Array(4), /x/g,
	]`)
	require.NoError(t, err)
	w.walk("results", results)
	assert.Empty(t, w.reports)
	assert.Greater(t, len(w.seen), 300, "the walk must reach the built-ins")
	for _, name := range []string{"require", "process", "setTimeout", "setInterval", "fetch", "XMLHttpRequest"} {
		assert.Nil(t, c.vm.GlobalObject().Get(name), "global %s", name)
	}
}

// The walk finds a Go value when one is reachable, so the test above can
// fail.
func TestWalkDetectsGoValues(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]any{
		"struct":    struct{ A int }{1},
		"map":       map[string]any{"a": 1},
		"slice":     []string{"a"},
		"func":      func(a int) int { return a },
		"pointer":   &struct{ B string }{"x"},
		"nested":    map[string]any{"t": struct{}{}},
		"time":      time.Unix(0, 0),
		"int slice": []int{1, 2},
	} {
		vm := goja.New()
		holder := vm.NewObject()
		require.NoError(t, holder.Set("hidden", vm.ToValue(v)))
		require.NoError(t, vm.GlobalObject().Set("holder", holder))
		w := newWalker(vm)
		w.walk("globalThis", vm.GlobalObject())
		assert.NotEmpty(t, w.reports, name)
	}
}
