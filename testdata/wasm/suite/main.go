// Command suite is the WebAssembly port of the sandbox conformance suite's
// programs: one export per program, each doing what the JavaScript program
// of the same name does (sandbox/sandboxtest).
package main

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/corral-rt/corral/hostabi/guest"
)

func main() {}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func set(name string, v any) { must(guest.SetVar(name, v)) }

func code(err error) string {
	var e *guest.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return "ok"
}

//go:wasmexport noop
func noop(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) { return guest.Output{}, nil })
}

//go:wasmexport emit
func emit(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) { return guest.Output{}, guest.Emit("token", "hello") })
}

//go:wasmexport call_refused_uncaught
func callRefusedUncaught(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		return guest.Output{}, guest.Publish("greeting", map[string]string{"text": "hi"})
	})
}

//go:wasmexport call_refused
func callRefused(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		if err := guest.Publish("greeting", map[string]any{}); err != nil {
			var e *guest.Error
			errors.As(err, &e)
			return guest.Output{Vars: map[string]any{"code": e.Code, "message": e.Message}}, nil
		}
		return guest.Output{Vars: map[string]any{"reached": true}}, nil
	})
}

//go:wasmexport now_caught
func nowCaught(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		t, err := guest.Now()
		if err != nil {
			return guest.Output{Vars: map[string]any{"code": code(err)}}, nil
		}
		return guest.Output{Vars: map[string]any{"now": t.UnixMilli()}}, nil
	})
}

//go:wasmexport bad_args
func badArgs(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		codes := map[string]any{}
		attempt := func(name, fn string, args ...any) {
			_, err := guest.Call(fn, args...)
			codes[name] = code(err)
		}
		attempt("emit_no_type", "emit")
		attempt("emit_type_number", "emit", 42, "x")
		attempt("log_bad_level", "log", "loud", "x")
		attempt("log_no_message", "log", "info")
		attempt("publish_wildcard", "publish", "a.*", 1)
		attempt("publish_tail_wildcard", "publish", "a.>", 1)
		attempt("publish_empty_segment", "publish", "a..b", 1)
		attempt("publish_empty", "publish", "", 1)
		attempt("publish_extra_arg", "publish", "a", 1, 2)
		attempt("usage_bad_shape", "reportUsage", map[string]any{"input": "many"})
		return guest.Output{Vars: map[string]any{"codes": codes}}, nil
	})
}

//go:wasmexport host_names
func hostNames(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		names, err := guest.HostFunctions()
		return guest.Output{Vars: map[string]any{"names": names}}, err
	})
}

//go:wasmexport publish
func publish(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		must(guest.Publish("greeting", map[string]string{"text": "hi"}))
		return guest.Output{}, guest.Publish("agent.run.other.end", map[string]bool{"forged": true})
	})
}

//go:wasmexport signal_done
func signalDone(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		set("before", 1)
		guest.Done()
		set("after", 1)
		return guest.Output{}, nil
	})
}

//go:wasmexport signal_done_in_try
func signalDoneInTry(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		defer set("finally", 1)
		defer func() {
			if recover() != nil {
				set("caught", 1)
			}
		}()
		guest.Done()
		return guest.Output{}, nil
	})
}

//go:wasmexport signal_interrupt
func signalInterrupt(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		guest.InterruptRun("user_input", "need input")
		set("after", 1)
		return guest.Output{}, nil
	})
}

//go:wasmexport signal_interrupt_text
func signalInterruptText(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		guest.InterruptRun("", "wait for me")
		return guest.Output{}, nil
	})
}

//go:wasmexport signal_error
func signalError(p, n uint32) {
	guest.Run(p, n, func(in guest.Input) (guest.Output, error) {
		kind, _ := in.Config()["kind"].(string)
		guest.Fail(kind, "it failed", map[string]int{"code": 7})
		return guest.Output{}, nil
	})
}

//go:wasmexport signal_error_text
func signalErrorText(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		guest.Fail("", "plain failure", nil)
		return guest.Output{}, nil
	})
}

//go:wasmexport throw
func throw(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) { panic(errors.New("boom")) })
}

//go:wasmexport steer
func steer(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		msgs, err := guest.DrainSteer()
		if err != nil {
			return guest.Output{}, err
		}
		return guest.Output{}, guest.AppendChannel(guest.MainChannel, msgs)
	})
}

// sink keeps values the optimizer must not drop.
var sink any

//go:wasmexport loop
func loop(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		for i := 0; ; i++ {
			sink = i
		}
	})
}

//go:wasmexport loop_in_catch
func loopInCatch(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		for {
			func() {
				defer func() { _ = recover() }()
				panic("again")
			}()
		}
	})
}

func recurse(n int) int { return recurse(n+1) + 1 }

//go:wasmexport recurse
func recurseExport(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		return guest.Output{Vars: map[string]any{"n": recurse(0)}}, nil
	})
}

func recurseCatch() (r int) {
	defer func() {
		if recover() != nil {
			r = recurseCatch()
		}
	}()
	return recurseCatch()
}

//go:wasmexport recurse_catch
func recurseCatchExport(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		return guest.Output{Vars: map[string]any{"n": recurseCatch()}}, nil
	})
}

//go:wasmexport double_string
func doubleString(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		s := "x"
		for {
			s = s + s
			sink = s
		}
	})
}

type item struct {
	I     int
	Items []int
	S     string
}

//go:wasmexport grow_array
func growArray(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		var a []item
		for i := 0; ; i++ {
			items := make([]int, 256)
			for j := range items {
				items[j] = i
			}
			a = append(a, item{I: i, Items: items, S: "item " + strings.Repeat("i", i%8)})
			sink = a
		}
	})
}

func size(in guest.Input) int {
	f, _ := in.Config()["size"].(float64)
	return int(f)
}

//go:wasmexport big_var
func bigVar(p, n uint32) {
	guest.Run(p, n, func(in guest.Input) (guest.Output, error) {
		return guest.Output{}, guest.SetVar("big", strings.Repeat("x", size(in)))
	})
}

//go:wasmexport big_arg
func bigArg(p, n uint32) {
	guest.Run(p, n, func(in guest.Input) (guest.Output, error) {
		return guest.Output{}, guest.Emit("token", strings.Repeat("x", size(in)))
	})
}

//go:wasmexport event_flood
func eventFlood(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		for i := 0; i < 100000; i++ {
			_ = guest.Emit("token", "t"+itoa(i))
		}
		return guest.Output{}, nil
	})
}

func itoa(i int) string {
	data, _ := json.Marshal(i)
	return string(data)
}

//go:wasmexport deterministic
func deterministic(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		now := time.Now()
		set("now", now.UnixMilli())
		set("iso", time.Now().UTC().Format("2006-01-02T15:04:05.000Z"))
		set("random", []float64{rand.Float64(), rand.Float64()})
		hostNow, err := guest.Call(guest.FuncNow)
		must(err)
		set("host_now", hostNow)
		r, err := guest.Random()
		must(err)
		set("host_random", r)
		must(guest.Emit("token", "t"+itoa(int(math.Floor(rand.Float64()*1000)))))
		return guest.Output{}, guest.Publish("state", map[string]float64{"r": rand.Float64()})
	})
}

//go:wasmexport utc_dates
func utcDates(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		d := time.Date(2024, 1, 2, 3, 4, 5, 0, time.Local)
		_, offset := d.Zone()
		parsed, err := time.ParseInLocation("2006-01-02T15:04:05", "2024-01-02T03:04:05", time.Local)
		must(err)
		return guest.Output{Vars: map[string]any{"dates": map[string]any{
			"string": d.String(), "hours": d.Hour(), "offset": offset / 60,
			"parsed": parsed.UTC().Format("2006-01-02T15:04:05.000Z"),
			"same":   time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC).Equal(d),
		}}}, nil
	})
}

//go:wasmexport ask_user
func askUser(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		r, err := guest.AskUser(guest.Prompt{})
		if err != nil {
			return guest.Output{}, err
		}
		return guest.Output{Vars: map[string]any{"answer": len(r.Parts)}}, nil
	})
}
