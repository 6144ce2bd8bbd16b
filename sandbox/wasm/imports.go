package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/tetratelabs/wazero/api"
)

// Import modules (docs/hostabi.md).
const (
	ModuleHost   = "host"   // one function per entry of the host catalog
	ModuleCorral = "corral" // the node API: board, signals, results
)

var (
	callParams  = []api.ValueType{api.ValueTypeI32, api.ValueTypeI32}
	callResults = []api.ValueType{api.ValueTypeI64}
)

// instantiateCatalog binds every function of the host catalog as an
// import of module "host", generically: each hands its JSON arguments to
// the call's sandbox.ABI. It returns the names bound, sorted.
func (r *Runtime) instantiateCatalog(ctx context.Context) ([]string, error) {
	b := r.wz.NewHostModuleBuilder(ModuleHost)
	names := hostabi.Names()
	for _, name := range names {
		b.NewFunctionBuilder().WithGoModuleFunction(guestCall(name, abiCall(name)), callParams, callResults).
			WithParameterNames("args_ptr", "args_len").Export(name)
	}
	_, err := b.Instantiate(ctx)
	return names, err
}

// abiCall is the body of the host function name: the call's ABI.
func abiCall(name string) guestFunc {
	return func(ctx context.Context, st *callState, args []byte) (json.RawMessage, error) {
		if st.inv.ABI == nil {
			return nil, fault.New(fault.NotAvailable, "host "+name, "node %q: this call has no host functions", st.inv.Node)
		}
		if len(args) == 0 {
			args = []byte("[]")
		}
		if st.rt.blocking[name] {
			return st.callBlocking(ctx, name, args)
		}
		return st.inv.ABI.Call(ctx, name, args)
	}
}

// guestCall adapts fn to wazero's stack-based host function: (args_ptr,
// args_len) -> i64.
func guestCall(name string, fn guestFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		st := stateFrom(ctx)
		if st == nil {
			stack[0] = noCall(name)
			return
		}
		stack[0] = st.dispatch(ctx, mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1]), fn)
	}
}

// noCall answers a function called outside a node call (from a start
// routine): an error the guest cannot fetch.
func noCall(string) uint64 { return resultErrFlag }

// instantiateNodeAPI instantiates module "corral": the board, the
// signals, parallel.cancelNode, host.functions and result.
func (r *Runtime) instantiateNodeAPI(ctx context.Context) error {
	b := r.wz.NewHostModuleBuilder(ModuleCorral)
	for name, fn := range nodeAPI() {
		b.NewFunctionBuilder().WithGoModuleFunction(guestCall(name, fn), callParams, callResults).
			WithParameterNames("args_ptr", "args_len").Export(name)
	}
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		st := stateFrom(ctx)
		if st == nil {
			stack[0] = 1
			return
		}
		stack[0] = uint64(st.fetch(mod, api.DecodeU32(stack[0]), api.DecodeU32(stack[1])))
	}), callParams, []api.ValueType{api.ValueTypeI32}).WithParameterNames("dst_ptr", "dst_len").Export("result")
	_, err := b.Instantiate(ctx)
	return err
}

// guestClock answers the guest's WASI clocks and random source from the
// host. The wall clock is host.now read once per call (journaled by the
// dispatcher; the Unix epoch when the call may not read the clock); later
// readings in the same call are that instant plus how far the monotonic
// clock has moved since, so a guest that reads the clock in a loop costs
// one journal entry per call, not one per reading. The monotonic clock is
// a counter that moves only when read or slept on. Random bytes come from
// a ChaCha8 stream seeded once per instance from host.random (from the run
// and node ids when the call may not read it). A guest's runtime is
// therefore as deterministic as its host.
type guestClock struct {
	inst *instance
	mono int64
	rng  *rand.ChaCha8

	wallCall *callState // the call wallBase was read for
	wallBase time.Time  // the host's clock at the call's first reading
	wallMono int64      // mono at that reading
}

// monoStep is how far the monotonic clock moves at each reading.
const monoStep = int64(time.Microsecond)

func (c *guestClock) walltime() (sec int64, nsec int32) {
	st := c.inst.current()
	if st == nil {
		return 0, 0
	}
	if c.wallCall != st {
		c.wallCall, c.wallBase, c.wallMono = st, hostNow(st), c.mono
	}
	t := c.wallBase.Add(time.Duration(c.mono - c.wallMono))
	c.mono += monoStep
	return t.Unix(), int32(t.Nanosecond())
}

// hostNow is host.now for the call st, or the Unix epoch when the call
// may not read the clock.
func hostNow(st *callState) time.Time {
	epoch := time.Unix(0, 0)
	if st.inv.ABI == nil {
		return epoch
	}
	res, err := st.inv.ABI.Call(st.ctx, hostabi.FuncNow, nil)
	if err != nil {
		return epoch
	}
	var v struct {
		UnixMS int64 `json:"unix_ms"`
	}
	if json.Unmarshal(res, &v) != nil {
		return epoch
	}
	return time.UnixMilli(v.UnixMS)
}

func (c *guestClock) nanotime() int64 {
	c.mono += monoStep
	return c.mono
}

func (c *guestClock) nanosleep(ns int64) {
	if ns > 0 {
		c.mono += ns
	}
}

// Read fills p with the instance's random stream.
func (c *guestClock) Read(p []byte) (int, error) {
	if c.rng == nil {
		c.rng = rand.NewChaCha8(c.seed())
	}
	return c.rng.Read(p)
}

// seed reads host.random once; without it the stream is seeded from the
// run and the node.
func (c *guestClock) seed() [32]byte {
	h := sha256.New()
	st := c.inst.current()
	if st != nil && st.inv.ABI != nil {
		_, _ = h.Write([]byte(st.inv.Run.RunID + "\x00" + st.inv.Node))
		if res, err := st.inv.ABI.Call(st.ctx, hostabi.FuncRandom, nil); err == nil {
			var f float64
			if json.Unmarshal(res, &f) == nil {
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], math.Float64bits(f))
				_, _ = h.Write(b[:])
			}
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}
