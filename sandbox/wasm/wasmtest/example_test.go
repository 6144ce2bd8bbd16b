package wasmtest_test

import (
	"fmt"
	"os"

	"github.com/corral-rt/corral/sandbox/wasm/wasmtest"
)

// A package that does not exist does not build; the error says why.
func ExampleBuilder_BuildErr() {
	dir, err := os.MkdirTemp("", "guests-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	b, err := wasmtest.NewBuilder(dir)
	if err != nil {
		panic(err)
	}
	_, err = b.BuildErr("testdata/wasm/no-such-guest")
	fmt.Println(err != nil)
	// Output:
	// true
}
