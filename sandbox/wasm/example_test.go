package wasm_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/wasm"
)

// A module that is not WebAssembly is refused with a Validation error
// naming the node; Eval is not available in the wasm runtime.
func ExampleRuntime_Invoke() {
	rt, err := wasm.New(wasm.Options{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "greet",
		Script: sandbox.Script{Module: []byte("not wasm"), Entry: "node"}}, nil)
	fmt.Println(errors.Is(err, fault.Validation))
	_, err = rt.Eval(context.Background(), sandbox.Evaluation{Node: "edge", Expr: "true"})
	fmt.Println(errors.Is(err, fault.NotAvailable))
	// Output:
	// true
	// true
}
