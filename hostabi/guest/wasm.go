//go:build wasip1

package guest

import (
	"encoding/json"
	"runtime"
	"unsafe"
)

//go:wasmexport corral_abi_version
func abiVersion() int32 { return ABIVersion }

// alloc makes a buffer of size bytes for the host to write into and keeps
// it alive until Run takes it.
//
//go:wasmexport corral_alloc
func alloc(size uint32) uint32 {
	buf := make([]byte, max(size, 1))
	ptr := uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	state.pinned[ptr] = buf
	return ptr
}

//go:wasmexport node
func node(ptr, n uint32) { Run(ptr, n, state.node) }

type rawFunc func(ptr unsafe.Pointer, n uint32) uint64

// invoke calls f with data and fetches its pending result.
func invoke(f rawFunc, data []byte) (json.RawMessage, error) {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(unsafe.SliceData(data))
	}
	r := f(p, uint32(len(data)))
	runtime.KeepAlive(data)
	n := uint32(r & resultLenMask)
	var payload []byte
	if n > 0 {
		payload = make([]byte, n)
		if corralResult(unsafe.Pointer(unsafe.SliceData(payload)), n) != 0 {
			return nil, &Error{Code: "internal", Message: "the host lost the call's result"}
		}
	}
	return decodeResult(r&resultErrFlag != 0, payload)
}

func rawHost(name string, data []byte) (json.RawMessage, error) {
	f := hostFunc(name)
	if f == nil {
		return nil, &Error{Code: "not_found", Message: "host function " + name + " is not bound by this guest"}
	}
	return invoke(f, data)
}

func rawCorral(name string, data []byte) (json.RawMessage, error) {
	f := corralFunc(name)
	if f == nil {
		return nil, &Error{Code: "not_found", Message: "node function " + name + " is not bound by this guest"}
	}
	return invoke(f, data)
}

//go:wasmimport corral result
func corralResult(ptr unsafe.Pointer, n uint32) uint32

//go:wasmimport corral board.getVar
func boardGetVar(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral board.setVar
func boardSetVar(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral board.deleteVar
func boardDeleteVar(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral board.hasVar
func boardHasVar(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral board.getVars
func boardGetVars(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral board.resolve
func boardResolve(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral board.resolveString
func boardResolveString(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral board.channel
func boardChannel(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral board.setChannel
func boardSetChannel(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral board.appendChannel
func boardAppendChannel(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral parallel.cancelNode
func parallelCancelNode(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral signal.done
func signalDone(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral signal.interrupt
func signalInterrupt(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral signal.error
func signalError(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral fail
func corralFail(ptr unsafe.Pointer, n uint32) uint64

//go:wasmimport corral host.functions
func hostFunctions(ptr unsafe.Pointer, n uint32) uint64

func corralFunc(name string) rawFunc {
	switch name {
	case "board.getVar":
		return boardGetVar
	case "board.setVar":
		return boardSetVar
	case "board.deleteVar":
		return boardDeleteVar
	case "board.hasVar":
		return boardHasVar
	case "board.getVars":
		return boardGetVars
	case "board.resolve":
		return boardResolve
	case "board.resolveString":
		return boardResolveString
	case "board.channel":
		return boardChannel
	case "board.setChannel":
		return boardSetChannel
	case "board.appendChannel":
		return boardAppendChannel
	case "parallel.cancelNode":
		return parallelCancelNode
	case "signal.done":
		return signalDone
	case "signal.interrupt":
		return signalInterrupt
	case "signal.error":
		return signalError
	case "fail":
		return corralFail
	case "host.functions":
		return hostFunctions
	}
	return nil
}
