//go:build race

package wasm_test

// rssBound is the peak RSS the adversarial modules may drive the test
// process to (the race detector's shadow memory included).
const rssBound = 4 << 30
