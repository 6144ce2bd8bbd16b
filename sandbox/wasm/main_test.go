package wasm_test

import (
	"os"
	"testing"

	"github.com/corral-rt/corral/sandbox/wasm/wasmtest"
)

// guests builds the Go guests of the tests, once per test binary.
var guests *wasmtest.Builder

func TestMain(m *testing.M) { os.Exit(wasmtest.Main(m, &guests)) }

const suiteGuest = "testdata/wasm/suite"
