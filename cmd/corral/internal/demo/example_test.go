package demo_test

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/corral-rt/corral/cmd/corral/internal/demo"
	"github.com/corral-rt/corral/runtime/deploy"
)

// Extract the demo and read its deployment document.
func Example() {
	dir, err := os.MkdirTemp("", "demo-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	file, err := demo.Extract(dir)
	if err != nil {
		panic(err)
	}
	doc, err := deploy.ParseFile(file)
	if err != nil {
		panic(err)
	}
	fmt.Println(slices.Sorted(maps.Keys(doc.Agents)))
	fmt.Println(doc.Agents["demo"].Capabilities)
	// Output:
	// [demo]
	// [emit ask_user steer interrupt]
}
