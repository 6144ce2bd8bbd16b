package hostabi

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/corral-rt/corral/runtime/agent"
)

// The names of the catalog's functions, as scripts call them (host.<name>).
const (
	FuncAskUser        = "askUser"
	FuncCheckInterrupt = "checkInterrupt"
	FuncDrainSteer     = "drainSteer"
	FuncEmit           = "emit"
	FuncLog            = "log"
	FuncNow            = "now"
	FuncPublish        = "publish"
	FuncRandom         = "random"
	FuncReportUsage    = "reportUsage"
)

// handler runs one host function whose arguments passed the arity check.
// args holds one raw JSON value per argument given; it returns the JSON
// result.
type handler func(ctx context.Context, d *Dispatcher, args []json.RawMessage) (json.RawMessage, error)

// Func describes one host function of the catalog. A Func is a value:
// Catalog and Lookup return copies.
type Func struct {
	Name       string // the name scripts call, for example "drainSteer"
	Capability string // the capability the document must grant (an agent.Cap* name)
	Args       string // the JSON shape of the argument array, for documentation
	Result     string // the JSON shape of the result, for documentation
	// MaxArgBytes caps the encoded argument array; 0 means
	// Limits.MaxValueBytes, and the smaller of the two applies.
	MaxArgBytes int64
	// NonDeterministic functions answer from outside the script (time,
	// randomness, the user, the steer queue, interrupts); their calls are
	// journaled.
	NonDeterministic bool
	// Blocking functions may wait on something outside the runtime for as
	// long as it takes (a person's answer, another agent's turn): a
	// sandbox gives up its call slot while one runs and takes it back
	// before the script continues.
	Blocking bool
	// Requires reports whether a host yields what the function needs
	// (found with agent.CapabilityFromHost); nil means any host will do.
	Requires func(agent.Host) bool

	minArgs, maxArgs int
	handler          handler
}

// Arity returns the fewest and the most arguments the function takes.
func (f Func) Arity() (lo, hi int) { return f.minArgs, f.maxArgs }

// has reports whether the host yields the capability T.
func has[T any](h agent.Host) bool {
	_, ok := agent.CapabilityFromHost[T](h)
	return ok
}

// hasEventBus reports whether the host yields the run's event bus
// (agent.EventBusFromHost): publishing a custom event is a capability of
// the host, which a host without a bus refuses, although every host is an
// agent.Publisher.
func hasEventBus(h agent.Host) bool {
	_, ok := agent.EventBusFromHost(h)
	return ok
}

// catalog builds the function table, sorted by name.
func catalog() []Func {
	return []Func{
		{Name: FuncAskUser, Capability: agent.CapAskUser, NonDeterministic: true, Blocking: true,
			Args:     `[{"parts": [part...], "schema"?: any, "source"?: string, "metadata"?: {string: string}}]`,
			Result:   `{"parts": [part...], "metadata"?: {string: string}}`,
			Requires: has[agent.UserPrompter], minArgs: 1, maxArgs: 1, handler: callAskUser},
		{Name: FuncCheckInterrupt, Capability: agent.CapInterrupt, NonDeterministic: true,
			Args: `[]`, Result: `{"cause": string, "detail": string} or null`,
			Requires: has[agent.Interrupter], handler: callCheckInterrupt},
		{Name: FuncDelegate, Capability: agent.CapDelegate, NonDeterministic: true, Blocking: true,
			Args:     `[agentId: string, message: string | message, options?: {"inputs"?: object, "metadata"?: {string: string}, "idempotency_key"?: string}]`,
			Result:   `{"id": string, "target": string, "status": "succeeded"|"failed"|"canceled", "run_id": string, "output": [message...], "text": string, "error"?: {"code": string, "message": string}}`,
			Requires: hasService, minArgs: 2, maxArgs: 3, handler: callDelegate},
		{Name: FuncDrainSteer, Capability: agent.CapSteer, NonDeterministic: true,
			Args: `[]`, Result: `[message...] ([] when nothing is queued or the host has no steer source)`,
			handler: callDrainSteer},
		{Name: FuncEmit, Capability: agent.CapEmit,
			Args: `[type: string, payload?: any]`, Result: `null`,
			Requires: has[agent.Publisher], minArgs: 1, maxArgs: 2, handler: callEmit},
		{Name: FuncLog, Capability: agent.CapLog,
			Args: `[level: "debug"|"info"|"warn"|"error", message: string, attrs?: {string: any}]`, Result: `null`,
			Requires: has[agent.LogSink], minArgs: 2, maxArgs: 3, handler: callLog},
		{Name: FuncNow, Capability: agent.CapClock, NonDeterministic: true,
			Args: `[]`, Result: `{"unix_ms": integer, "iso": "2006-01-02T15:04:05.000Z"}`,
			Requires: has[agent.Clock], handler: callNow},
		{Name: FuncPublish, Capability: agent.CapPublish,
			Args: `[suffix: string, payload?: any]`, Result: `null`,
			Requires: hasEventBus, minArgs: 1, maxArgs: 2, handler: callPublish},
		{Name: FuncRandom, Capability: agent.CapRandom, NonDeterministic: true,
			Args: `[]`, Result: `number in [0, 1)`,
			Requires: has[agent.RandomSource], handler: callRandom},
		{Name: FuncReportUsage, Capability: agent.CapUsage,
			Args: `[{"input": integer, "output": integer, "total": integer}]`, Result: `null`,
			Requires: has[agent.UsageReporter], minArgs: 1, maxArgs: 1, handler: callReportUsage},
	}
}

// Catalog returns every host function, sorted by name. The slice is the
// caller's.
func Catalog() []Func { return catalog() }

// Lookup returns the host function called name.
func Lookup(name string) (Func, bool) {
	return lookupIn(catalog(), name)
}

func lookupIn(funcs []Func, name string) (Func, bool) {
	i, ok := slices.BinarySearchFunc(funcs, name, func(f Func, n string) int {
		switch {
		case f.Name < n:
			return -1
		case f.Name > n:
			return 1
		}
		return 0
	})
	if !ok {
		return Func{}, false
	}
	return funcs[i], true
}

// Names returns the names of the host functions, sorted.
func Names() []string { return slices.Clone(builtCatalog().names) }

// BlockingNames names the catalog's functions that may block for as long
// as it takes (Func.Blocking): runners give up a call's sandbox slot while
// one of them runs.
func BlockingNames() map[string]bool {
	out := map[string]bool{}
	for _, f := range Catalog() {
		if f.Blocking {
			out[f.Name] = true
		}
	}
	return out
}
