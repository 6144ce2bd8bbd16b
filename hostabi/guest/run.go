package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
)

// Handler is a node function.
type Handler func(in Input) (Output, error)

// Node makes h the node of the module's "node" export (the entry a script
// node names). Call it from an init function.
func Node(h Handler) { state.node = h }

// Run runs h as the call whose input the host wrote at ptr (n bytes): a
// module's own //go:wasmexport entries call it with their parameters.
func Run(ptr, n uint32, h Handler) {
	data, ok := takeInput(ptr, n)
	if !ok {
		failWith(&Error{Code: "internal", Message: "the call's input is not where the host said"})
		return
	}
	var in Input
	if err := json.Unmarshal(data, &in); err != nil {
		failWith(&Error{Code: "internal", Message: fmt.Sprintf("decode input: %v", err)})
		return
	}
	debug.SetMaxStack(stackBytes(in.Limits.StackDepth))
	if err := runHandler(in, h); err != nil {
		failWith(err)
	}
}

// stackBytes is the goroutine stack a stack_depth allows: 4 KiB a frame,
// at least 256 KiB (the runtime and JSON need some).
func stackBytes(depth int) int {
	if depth <= 0 {
		depth = 256
	}
	return max(depth*4<<10, 256<<10)
}

// runHandler runs h, turning a panic into an error, and applies its
// output.
func runHandler(in Input, h Handler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	if h == nil {
		return errors.New("no node function: call guest.Node from an init function")
	}
	out, err := h(in)
	if err != nil {
		return err
	}
	return apply(out)
}

// failWith ends the call with err: an *Error from the host keeps its code
// and message, any other error is reported by its text.
func failWith(err error) {
	var he *Error
	if !errors.As(err, &he) {
		he = &Error{Code: "internal", Message: err.Error()}
	}
	_, _ = corral("fail", he)
}

// guestState is what the module keeps between host calls.
type guestState struct {
	node   Handler
	pinned map[uint32][]byte // buffers handed to the host by alloc
}

var state = guestState{pinned: map[uint32][]byte{}}

// takeInput returns and unpins the buffer alloc made at ptr, if it holds n
// bytes.
func takeInput(ptr, n uint32) ([]byte, bool) {
	buf, ok := state.pinned[ptr]
	if !ok || uint32(len(buf)) < n {
		return nil, n == 0
	}
	delete(state.pinned, ptr)
	return buf[:n], true
}
