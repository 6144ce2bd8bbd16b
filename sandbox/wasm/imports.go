package wasm

import (
	"context"
	"encoding/json"

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
