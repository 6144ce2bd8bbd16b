//go:build !race

package wasm_test

// rssBound is the peak RSS the adversarial modules may drive the test
// process to.
const rssBound = 1 << 30

// stackRSSGrowth is how far one runaway recursion may raise the peak
// RSS: the engine's call stack stops growing past its ceiling (docs).
const stackRSSGrowth = 320 << 20
