package mixed_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/corral-rt/corral/runtime/deploy"
)

// The deployment binds two script runtimes, one per language.
func Example() {
	doc, err := deploy.ParseFile("deploy.yaml")
	if err != nil {
		panic(err)
	}
	for _, name := range slices.Sorted(maps.Keys(doc.Resources)) {
		r := doc.Resources[name]
		fmt.Println(name, r.Kind+"/"+r.Impl)
	}
	// Output:
	// events event.Bus/memory
	// js sandbox.Runtime/js
	// wasm sandbox.Runtime/wasm
}
