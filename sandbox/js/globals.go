package js

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

// method is one function of a global API object.
type method struct {
	name string
	fn   func(goja.FunctionCall) goja.Value
}

// api returns an object of hand-written functions, the only kind of Go
// code a script can reach; the caller freezes it.
func (c *call) api(methods ...method) *goja.Object {
	o := c.vm.NewObject()
	for _, m := range methods {
		_ = o.Set(m.name, c.native(m.name, m.fn))
	}
	return o
}

// native returns fn as a script function called name. goja names a Go
// function after its symbol ("github.com/…/js.(*call).hostFunc.func1"),
// which Function.prototype.toString and stack frames would show; named
// after the method, toString reads "function publish() { [native code] }".
// Every call of it passes enterNative.
func (c *call) native(name string, fn func(goja.FunctionCall) goja.Value) goja.Value {
	f := c.vm.ToValue(func(fc goja.FunctionCall) goja.Value {
		c.enterNative()
		defer c.leaveNative()
		return fn(fc)
	}).(*goja.Object)
	_ = f.DefineDataProperty("name", c.vm.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	if c.natives == nil {
		c.natives = map[*goja.Object]bool{}
	}
	c.natives[f] = true
	return f
}

// scriptStack is the stack of an error raised by a host function as the
// script sees it: the message and the script's own frames, without the
// frames of native functions ("at publish (native)").
func scriptStack(stack string) string {
	lines := strings.Split(stack, "\n")
	out := lines[:1]
	for _, l := range lines[1:] {
		if !strings.HasSuffix(strings.TrimSpace(l), "(native)") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// apis are the script API objects of a realm, made at its first Invoke
// and frozen with their functions: the functions act on the invocation the
// VM is running (the call's inv, board and abi), so that nothing of one
// invocation is reachable from the next. layer is the frozen object that
// holds them as globals: every invocation's global object inherits from
// it, and it inherits from the realm's frozen global object.
type apis struct {
	signal, board, run, node, parallel, console *goja.Object
	host                                        *goja.Object
	hostNames                                   []string // the ABI functions host was made for
	// hostSeen is the last ABI slice found equal to hostNames: the same
	// slice again (an ABI's Functions is read-only) needs no compare.
	hostSeen []string
	layer    *goja.Object
	// shared is the global object of the calls that need no own one
	// (needsOwnGlobal): empty, frozen, inheriting from layer; made at the
	// first such call on the layer.
	shared *goja.Object
}

func (c *call) newAPIs() *apis {
	return &apis{
		signal:  c.freezeAPI(c.signalAPI()),
		board:   c.freezeAPI(c.boardAPI()),
		run:     c.freezeAPI(c.runAPI()),
		node:    c.freezeAPI(c.api(method{"id", c.nodeIDFunc}, method{"type", c.nodeTypeFunc})),
		console: c.freezeAPI(c.consoleAPI()),
		parallel: c.freezeAPI(c.api(method{"cancelNode", func(fc goja.FunctionCall) goja.Value {
			if c.parallel == nil {
				return c.vm.ToValue(false)
			}
			return c.vm.ToValue(c.parallel(c.toStr(fc.Argument(0)).String(), c.toStr(fc.Argument(1)).String()))
		}})),
	}
}

// freezeAPI freezes o and the functions it holds.
func (c *call) freezeAPI(o *goja.Object) *goja.Object {
	for _, k := range o.Keys() {
		if f, ok := o.Get(k).(*goja.Object); ok {
			c.freeze(f)
		}
	}
	return c.freeze(o)
}

// globalsLayer returns the frozen object holding the script globals for
// the ABI's functions: the realm's when its host object was made for the
// same names, else a new one, kept for the next invocation. Its config is
// an empty frozen object; an invocation with a config shadows it.
func (c *call) globalsLayer(names []string) *goja.Object {
	a := c.apis
	if a.layer != nil && sameSlice(names, a.hostSeen) {
		return a.layer
	}
	if a.layer != nil && slices.Equal(names, a.hostNames) {
		a.hostSeen = names
		return a.layer
	}
	methods := make([]method, 0, len(names))
	for _, n := range names {
		methods = append(methods, method{n, c.hostFunc(n)})
	}
	a.host, a.hostNames, a.hostSeen = c.freezeAPI(c.api(methods...)), slices.Clone(names), names
	layer := c.vm.CreateObject(c.template)
	for _, g := range []struct {
		name string
		v    *goja.Object
	}{
		{"config", c.freeze(c.vm.NewObject())}, {"signal", a.signal}, {"board", a.board}, {"host", a.host},
		{"console", a.console}, {"run", a.run}, {"node", a.node}, {"parallel", a.parallel},
	} {
		_ = layer.DefineDataProperty(g.name, g.v, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	}
	a.layer, a.shared = c.freeze(layer), nil
	return a.layer
}

// sameSlice reports whether a and b are the same slice: the same length
// and, when not empty, the same first element.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// installGlobals gives the invocation a new global object that inherits
// its globals (config, signal, board, host, run, node, parallel, console)
// from the realm's frozen layer; Date and Math.random read the
// invocation's host.
//
// A script that cannot reach its global object (shared) runs with a shared
// one instead: the layer's, frozen and empty, without a config; with a
// static config (sandbox.Script.Config), one per config, frozen,
// holding only config. Nothing can be left on either, and making none
// saves an object per call. A static config is made into a script value
// once per VM.
func (c *call) installGlobals(inv sandbox.Invocation, shared bool) {
	c.nodeType, c.runInfo, c.parallel, c.abi = inv.Type, inv.Run, inv.Parallel, inv.ABI
	c.board.Reset(inv.Board, inv.BoardBytes)
	if c.abi == nil {
		c.abi = noABI{}
	}
	if c.apis == nil {
		c.apis = c.newAPIs()
	}
	layer := c.globalsLayer(c.abi.Functions())
	if len(inv.CallConfig()) == 0 {
		if !shared {
			c.ownGlobal(layer)
			return
		}
		if c.apis.shared == nil {
			c.apis.shared = c.freeze(c.vm.CreateObject(layer))
		}
		c.vm.SetGlobalObject(c.apis.shared)
		return
	}
	cfg, static := c.configValue(inv)
	if shared && static != nil {
		c.vm.SetGlobalObject(static.sharedGlobal(c, layer))
		return
	}
	global := c.ownGlobal(layer)
	_ = global.DefineDataProperty("config", cfg, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
}

// maxStaticConfigs bounds the static configs a VM keeps (call.configs).
const maxStaticConfigs = 64

// staticConfig is what a VM made of a config the caller hands unchanged
// to every call of a node (sandbox.Script.Config): the deeply
// frozen value the script sees as config, and the shared global object
// that holds it for scripts that need no own one, made for the globals
// layer of the last such call (a call with another layer, from an ABI with
// other functions, replaces it: one per config, however the ABIs change).
type staticConfig struct {
	src    map[string]any // kept alive, so that no other map takes its address
	value  goja.Value
	size   int64 // the config's JSON bytes, checked against each call's memory budget
	layer  *goja.Object
	global *goja.Object
}

// configValue returns the value the script sees as config: made (charged
// to the call's memory budget) and deeply frozen at each call, or, for a
// static config, at the first call on this VM and kept.
func (c *call) configValue(inv sandbox.Invocation) (goja.Value, *staticConfig) {
	if inv.Config != nil {
		return c.fromGoFrozen(inv.Config, c.budget(), sandbox.LimitMemory), nil
	}
	cfg := inv.Script.Config
	key := reflect.ValueOf(cfg).Pointer() // the map stays alive in its entry: no other takes its address
	if sc, ok := c.configs[key]; ok {
		if sc.size > c.budget() {
			c.abort(c.limitError(sandbox.LimitMemory))
		}
		return sc.value, sc
	}
	size, err := sandbox.JSONBytes(cfg)
	if err != nil {
		size = c.budget() + 1 // fromGo below reports what is wrong with it
	}
	v := c.fromGoFrozen(cfg, c.budget(), sandbox.LimitMemory)
	if c.configs == nil || len(c.configs) >= maxStaticConfigs {
		c.configs = map[uintptr]*staticConfig{}
	}
	sc := &staticConfig{src: cfg, value: v, size: size}
	c.configs[key] = sc
	return v, sc
}

// sharedGlobal returns the frozen global object, inheriting from layer,
// whose only own property is the static config.
func (sc *staticConfig) sharedGlobal(c *call, layer *goja.Object) *goja.Object {
	if sc.layer == layer {
		return sc.global
	}
	g := c.vm.CreateObject(layer)
	_ = g.DefineDataProperty("config", sc.value, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	sc.layer, sc.global = layer, c.freeze(g)
	return g
}

func (c *call) nodeIDFunc(goja.FunctionCall) goja.Value   { return c.vm.ToValue(c.node) }
func (c *call) nodeTypeFunc(goja.FunctionCall) goja.Value { return c.vm.ToValue(c.nodeType) }

func (c *call) runAPI() *goja.Object {
	run := func(field func(sandbox.RunInfo) string) func(goja.FunctionCall) goja.Value {
		return func(goja.FunctionCall) goja.Value { return c.vm.ToValue(field(c.runInfo)) }
	}
	return c.api(
		method{"get_run_id", run(func(r sandbox.RunInfo) string { return r.RunID })},
		method{"get_task_id", run(func(r sandbox.RunInfo) string { return r.TaskID })},
		method{"get_agent_id", run(func(r sandbox.RunInfo) string { return r.AgentID })},
		method{"get_context_id", run(func(r sandbox.RunInfo) string { return r.ContextID })},
		method{"get_parent_run_id", run(func(r sandbox.RunInfo) string { return r.ParentRunID })},
	)
}

// signalAPI is signal.{interrupt, error, done}; each ends the script.
func (c *call) signalAPI() *goja.Object {
	return c.api(
		method{"done", func(goja.FunctionCall) goja.Value {
			c.abort(doneSignal{})
			return nil
		}},
		method{"interrupt", func(fc goja.FunctionCall) goja.Value {
			kind, msg, detail := c.signalArg(fc.Argument(0))
			intr := agent.Interrupt{Cause: interruptCause(kind), Detail: clip(msg, maxMessageLen)}
			if intr.Detail == "" && detail != nil {
				intr.Detail = string(detail)
			}
			c.abort(fmt.Errorf("%s: %w", c.op.String(), agent.Interrupted(intr)))
			return nil
		}},
		method{"error", func(fc goja.FunctionCall) goja.Value {
			kind, msg, detail := c.signalArg(fc.Argument(0))
			c.abort(&sandbox.ScriptError{Node: c.node, Kind: sandbox.SignalKind(kind), Message: clip(msg, maxMessageLen), Detail: detail})
			return nil
		}},
	)
}

// signalArg reads a signal's argument: a message, or {kind, message,
// detail}.
func (c *call) signalArg(v goja.Value) (kind, msg string, detail json.RawMessage) {
	o, ok := v.(*goja.Object)
	if !ok {
		if isNullish(v) {
			return "", "", nil
		}
		return "", c.toStr(v).String(), nil
	}
	if k := o.Get("kind"); !isNullish(k) {
		kind = c.toStr(k).String()
	}
	if m := o.Get("message"); !isNullish(m) {
		msg = c.toStr(m).String()
	}
	if d := o.Get("detail"); d != nil && !goja.IsUndefined(d) {
		detail = c.toJSON(d, c.limits.MaxValueBytes, sandbox.LimitValueBytes)
	}
	return kind, msg, detail
}

func interruptCause(kind string) agent.InterruptCause {
	switch c := agent.InterruptCause(kind); c {
	case agent.CauseUserCancel, agent.CauseUserInput, agent.CauseHostShutdown, agent.CauseCustom:
		return c
	}
	return agent.CauseCustom
}

// consoleAPI routes console.log and its siblings to host.log. A refused
// or failing log is dropped; a limit still stops the call.
func (c *call) consoleAPI() *goja.Object {
	logAt := func(level string) func(goja.FunctionCall) goja.Value {
		return func(fc goja.FunctionCall) goja.Value {
			parts := make([]string, len(fc.Arguments))
			for i, a := range fc.Arguments {
				if s, ok := a.(goja.String); ok {
					parts[i] = s.String()
				} else {
					parts[i] = string(c.toJSON(a, c.limits.MaxValueBytes, sandbox.LimitValueBytes))
				}
			}
			args, _ := json.Marshal([]string{level, strings.Join(parts, " ")})
			if _, err := c.abi.Call(c.hostCtx(), "log", args); err != nil && isLimit(err) {
				c.abort(err)
			}
			c.checkStop()
			return goja.Undefined()
		}
	}
	return c.api(method{"log", logAt("info")}, method{"info", logAt("info")}, method{"debug", logAt("debug")},
		method{"warn", logAt("warn")}, method{"error", logAt("error")})
}

func isLimit(err error) bool {
	var le *sandbox.LimitError
	return errors.As(err, &le)
}

// boardAPI is the board global. Values cross as JSON: a read returns a
// fresh copy (at most the memory budget), a write stores the JSON form of
// the value (at most max_value_bytes). Names starting with "__" are the
// kernel's: a script may read them but not write them, except the main
// channel.
func (c *call) boardAPI() *goja.Object {
	o := c.api(append(c.boardVarMethods(), c.boardChannelMethods()...)...)
	_ = o.Set("MAIN_CHANNEL", agent.MainChannel)
	return o
}

func (c *call) boardVarMethods() []method {
	return []method{
		{"getVar", func(fc goja.FunctionCall) goja.Value {
			v, ok := c.board.Var(c.toStr(fc.Argument(0)).String())
			if !ok {
				return goja.Undefined()
			}
			return c.fromGo(v, c.budget(), sandbox.LimitMemory)
		}},
		{"setVar", func(fc goja.FunctionCall) goja.Value {
			name := c.varName(fc.Argument(0), "setVar")
			_, v := c.toValue(fc.Argument(1), c.limits.MaxValueBytes, sandbox.LimitValueBytes)
			c.writeBoard(sandbox.Write{Op: sandbox.SetVar, Name: name, Value: v})
			return goja.Undefined()
		}},
		{"deleteVar", func(fc goja.FunctionCall) goja.Value {
			name := c.varName(fc.Argument(0), "deleteVar")
			c.writeBoard(sandbox.Write{Op: sandbox.DeleteVar, Name: name})
			return goja.Undefined()
		}},
		{"hasVar", func(fc goja.FunctionCall) goja.Value {
			_, ok := c.board.Var(c.toStr(fc.Argument(0)).String())
			return c.vm.ToValue(ok)
		}},
		{"getVars", func(goja.FunctionCall) goja.Value {
			return c.fromGo(maps.Clone(c.board.Vars()), c.budget(), sandbox.LimitMemory)
		}},
		{"resolve", func(fc goja.FunctionCall) goja.Value {
			v, err := sandbox.Resolve(c.board.Vars(), c.toStr(fc.Argument(0)).String())
			if err != nil {
				c.throw(err)
			}
			return c.fromGo(v, c.budget(), sandbox.LimitMemory)
		}},
		{"resolveString", func(fc goja.FunctionCall) goja.Value {
			s, err := sandbox.ResolveString(c.board.Vars(), c.toStr(fc.Argument(0)).String())
			if err != nil {
				c.throw(err)
			}
			return c.vm.ToValue(s)
		}},
	}
}

func (c *call) boardChannelMethods() []method {
	return []method{
		{"channel", func(fc goja.FunctionCall) goja.Value {
			msgs := c.board.Channel(c.toStr(fc.Argument(0)).String())
			if msgs == nil {
				msgs = []message.Message{}
			}
			return c.fromGo(msgs, c.budget(), sandbox.LimitMemory)
		}},
		{"setChannel", func(fc goja.FunctionCall) goja.Value {
			name := c.channelName(fc.Argument(0), "setChannel")
			msgs, _ := c.messages(fc.Argument(1), "setChannel", true)
			c.writeBoard(sandbox.Write{Op: sandbox.SetChannel, Name: name, Messages: msgs})
			return goja.Undefined()
		}},
		{"appendChannel", func(fc goja.FunctionCall) goja.Value {
			name := c.channelName(fc.Argument(0), "appendChannel")
			if msgs, _ := c.messages(fc.Argument(1), "appendChannel", false); len(msgs) > 0 {
				c.writeBoard(sandbox.Write{Op: sandbox.AppendChannel, Name: name, Messages: msgs})
			}
			return goja.Undefined()
		}},
	}
}

func (c *call) varName(v goja.Value, fn string) string {
	name := c.toStr(v).String()
	switch {
	case name == "":
		c.throw(fault.New(fault.Validation, "board."+fn, "a var name must not be empty"))
	case strings.HasPrefix(name, "__"):
		c.throw(fault.New(fault.Validation, "board."+fn, "var %q is reserved for the kernel", name))
	}
	return name
}

func (c *call) channelName(v goja.Value, fn string) string {
	name := c.toStr(v).String()
	switch {
	case name == "":
		c.throw(fault.New(fault.Validation, "board."+fn, "a channel name must not be empty"))
	case strings.HasPrefix(name, "__") && name != agent.MainChannel:
		c.throw(fault.New(fault.Validation, "board."+fn, "channel %q is reserved for the kernel", name))
	}
	return name
}

// messages decodes a message, or an array of them, strictly: unknown
// fields, bad roles and malformed parts throw a Validation error and
// nothing is written. listOnly requires an array. It also returns the
// messages' JSON size.
func (c *call) messages(v goja.Value, fn string, listOnly bool) ([]message.Message, int64) {
	if isNullish(v) {
		c.throw(fault.New(fault.Validation, "board."+fn, "want a message or an array of messages, got %s", v))
	}
	data := c.toJSON(v, c.limits.MaxValueBytes, sandbox.LimitValueBytes)
	var raw []json.RawMessage
	if c.isArray(v) {
		if err := json.Unmarshal(data, &raw); err != nil {
			c.throw(fault.Wrap(fault.Validation, err, "board."+fn, "messages"))
		}
	} else if listOnly {
		c.throw(fault.New(fault.Validation, "board."+fn, "want an array of messages"))
	} else {
		raw = []json.RawMessage{data}
	}
	out := make([]message.Message, 0, len(raw))
	for i, r := range raw {
		m, err := message.Decode(r)
		if err != nil {
			c.throw(fault.Wrap(fault.Validation, err, "board."+fn, "message %d", i))
		}
		out = append(out, m)
	}
	return out, int64(len(data))
}

// writeBoard makes a board write of the script through the call's view of
// the board, and stops the call with a max_board_bytes LimitError, the
// write not made, when it would make the board larger than the limit.
func (c *call) writeBoard(w sandbox.Write) {
	if _, ok := c.board.Write(w, c.limits.MaxBoardBytes); !ok {
		c.abort(c.limitError(sandbox.LimitBoardBytes))
	}
}
