package main

import (
	"encoding/json"
	"math"

	"github.com/corral-rt/corral/hostabi/guest"
)

// The module's globals: what pollute changes and inspect looks at, the
// counterparts of JavaScript's globals and built-in prototypes.
var (
	leaked    string
	leakedVar int
	polluted  string
	push      = func(s []int, v int) []int { return append(s, v) }
	stringify = func(v any) string { data, _ := json.Marshal(v); return string(data) }
	floor     = math.Floor
	who       string
)

//go:wasmexport pollute
func pollute(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		leaked, leakedVar, polluted = "yes", 1, "yes"
		push = func([]int, int) []int { return nil }
		stringify = func(any) string { return "hijacked" }
		floor = func(float64) float64 { return 42 }
		return guest.Output{Vars: map[string]any{"polluted": true}}, nil
	})
}

func typeOf[T comparable](v T) string {
	var zero T
	if v == zero {
		return "undefined"
	}
	return "set"
}

//go:wasmexport inspect
func inspect(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		pol := "no"
		if polluted != "" {
			pol = "yes"
		}
		return guest.Output{Vars: map[string]any{"seen": map[string]any{
			"leaked": typeOf(leaked), "leakedVar": typeOf(leakedVar), "polluted": pol,
			"push": len(push([]int{1}, 2)), "stringify": stringify(map[string]int{"a": 1}), "floor": floor(1.5),
		}}}, nil
	})
}

//go:wasmexport concurrent
func concurrent(p, n uint32) {
	guest.Run(p, n, func(in guest.Input) (guest.Output, error) {
		id, _ := in.Config()["id"].(string)
		who = id
		x := 0
		for i := 0; i < 20000; i++ {
			x += i
		}
		sink = x
		return guest.Output{Vars: map[string]any{"who": who, "id": id}}, nil
	})
}

//go:wasmexport globals
func globals(p, n uint32) {
	guest.Run(p, n, func(in guest.Input) (guest.Output, error) {
		cfg := in.Config()
		greeting := cfg["greeting"]
		cfg["greeting"] = "changed"
		after := in.Config()["greeting"]
		cancel, err := guest.CancelNode("other", "because")
		if err != nil {
			return guest.Output{}, err
		}
		r := in.Run
		return guest.Output{Vars: map[string]any{
			"run":    []string{r.RunID, r.TaskID, r.AgentID, r.ContextID, r.ParentRunID},
			"node":   []string{in.Node, in.Type},
			"config": greeting, "config_after": after, "frozen": after == greeting,
			"cancel": cancel,
		}}, nil
	})
}
