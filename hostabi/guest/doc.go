// Package guest is the Go SDK for WebAssembly node scripts: a guest built
// with the standard toolchain runs in the wasm script runtime (sandbox/wasm)
// and reaches the host through the host ABI of docs/hostabi.md.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o node.wasm ./mynode
//
// A node is one function:
//
//	package main
//
//	import "github.com/corral-rt/corral/hostabi/guest"
//
//	func init() {
//		guest.Node(func(in guest.Input) (guest.Output, error) {
//			n, _ := in.Config()["n"].(float64)
//			return guest.Output{Vars: map[string]any{"doubled": n * 2}}, nil
//		})
//	}
//
//	func main() {}
//
// and the script node names the export "node" as its entry. A module with
// several entries exports one function per entry with //go:wasmexport,
// each calling Run with its handler.
//
// # Host functions
//
// Every function of the host catalog has a typed wrapper (Now, Random,
// Emit, Publish, Log, DrainSteer, CheckInterrupt, AskUser, ReportUsage);
// Call reaches any of them by name with JSON arguments. A refused or
// malformed call returns an *Error whose Code is the error's kind
// ("policy_denied", "validation"). The board (GetVar, SetVar, Channel,
// AppendChannel, ...), the signals (Done, InterruptRun, Fail) and
// parallel.cancelNode (CancelNode) are the node API
// of the host, imported from module "corral".
//
// # Determinism
//
// The guest's clock (time.Now) and random source (crypto/rand, math/rand
// seeds) are the host's deterministic ones: WASI clock_time_get and
// random_get are answered from the host's clock and its seeded random
// source, so a guest that uses them replays exactly.
//
// # Errors
//
// A handler that returns an error ends the call: an *Error returned by a
// host call ends it with the host's own error, any other error with an
// internal script error carrying its text. A panic is recovered and
// reported the same way. Limits (memory, wall time, stack) stop the guest
// where it stands; the host reports them.
//
// Outside GOOS=wasip1 every host call fails with code "not_available", so
// the package builds and its pure parts test on any platform.
package guest
