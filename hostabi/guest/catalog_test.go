package guest_test

import (
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/corral-rt/corral/hostabi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The SDK imports every function of the host catalog from module host,
// and nothing else: a function added to the catalog needs its
// //go:wasmimport line and typed wrapper here.
func TestEveryCatalogFunctionImported(t *testing.T) {
	src, err := os.ReadFile("wasm_host.go")
	require.NoError(t, err)
	var got []string
	for _, m := range regexp.MustCompile(`//go:wasmimport host (\w+)`).FindAllStringSubmatch(string(src), -1) {
		got = append(got, m[1])
	}
	slices.Sort(got)
	assert.Equal(t, hostabi.Names(), got)
}

// Input.Config is a fresh copy at every call.
func TestConfigIsACopy(t *testing.T) {
	in := guestInput(`{"config": {"a": 1}}`)
	c := in.Config()
	c["a"] = 2.0
	assert.Equal(t, 1.0, in.Config()["a"])
}
