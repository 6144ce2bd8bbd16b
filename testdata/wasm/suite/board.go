package main

import (
	"encoding/json"

	"github.com/corral-rt/corral/hostabi/guest"
)

func msg(role, text string) map[string]any {
	return map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "text": text}}}
}

//go:wasmexport board_vars
func boardVars(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		set("n", 1)
		set("obj", map[string]any{"a": []any{1, "two", nil}, "b": true})
		set("gone", 1)
		must(guest.DeleteVar("gone"))
		has := []bool{}
		for _, k := range []string{"n", "gone", "seed"} {
			ok, err := guest.HasVar(k)
			must(err)
			has = append(has, ok)
		}
		set("has", has)
		seed, _, err := guest.GetVar("seed")
		must(err)
		set("seed_plus", seed.(float64)+1)
		vars, err := guest.Vars()
		must(err)
		keys := []string{}
		for k := range vars {
			keys = append(keys, k)
		}
		sortStrings(keys)
		set("keys", keys)
		_, ok, err := guest.GetVar("nope")
		must(err)
		set("missing", !ok)
		return guest.Output{}, nil
	})
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

//go:wasmexport board_copy
func boardCopy(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		v, _, err := guest.GetVar("obj")
		must(err)
		o := v.(map[string]any)
		o["a"] = "changed"
		again, _, err := guest.GetVar("obj")
		must(err)
		set("unchanged", again.(map[string]any)["a"])
		o["a"] = "written"
		return guest.Output{Vars: map[string]any{"obj": o}}, nil
	})
}

//go:wasmexport board_channels
func boardChannels(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		empty, err := guest.Channel("nothing")
		must(err)
		set("empty", len(empty))
		must(guest.SetChannel("side", []any{msg("user", "a")}))
		must(guest.AppendChannel("side", msg("assistant", "b")))
		must(guest.AppendChannel(guest.MainChannel, []any{msg("user", "c")}))
		set("main", guest.MainChannel)
		side, err := guest.Channel("side")
		must(err)
		texts := []string{}
		for _, m := range side {
			var w struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			}
			must(json.Unmarshal(m, &w))
			texts = append(texts, w.Parts[0].Text)
		}
		set("side_texts", texts)
		return guest.Output{}, nil
	})
}

//go:wasmexport board_invalid_messages
func boardInvalidMessages(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		codes := []string{}
		bad := []any{
			msg("robot", "x"),
			map[string]any{"role": "user", "parts": []any{}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "x"}}, "extra": 1},
			[]any{msg("user", "ok"), map[string]any{"role": "user"}},
			"text",
		}
		for _, m := range bad {
			if err := guest.AppendChannel("side", m); err != nil {
				codes = append(codes, code(err))
			}
		}
		if err := guest.SetChannel("side", msg("user", "x")); err != nil {
			codes = append(codes, code(err))
		}
		set("codes", codes)
		side, err := guest.Channel("side")
		must(err)
		set("side", len(side))
		return guest.Output{}, nil
	})
}

//go:wasmexport board_reserved
func boardReserved(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		codes := []string{}
		if err := guest.SetVar("__iterations", 1); err != nil {
			codes = append(codes, code(err))
		}
		if err := guest.SetChannel("__other", []any{}); err != nil {
			codes = append(codes, code(err))
		}
		return guest.Output{Vars: map[string]any{"codes": codes}}, nil
	})
}

//go:wasmexport board_resolve
func boardResolve(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		typed, err := guest.Resolve("${board.obj.n}")
		must(err)
		str, err := guest.ResolveString("n=${board.obj.n}")
		must(err)
		def, err := guest.Resolve("${board.nope:42}")
		must(err)
		out := map[string]any{"typed": typed, "str": str, "def": def}
		if _, err := guest.Resolve("${board.nope}"); err != nil {
			out["code"] = code(err)
		}
		return guest.Output{Vars: out}, nil
	})
}
