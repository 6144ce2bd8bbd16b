//go:build !race

package wasm_test

// rssBound is the peak RSS the adversarial modules may drive the test
// process to.
const rssBound = 1 << 30
