package js

import (
	"reflect"

	"github.com/corral-rt/corral/sandbox"
	"github.com/dop251/goja"
)

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
