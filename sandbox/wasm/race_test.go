//go:build race

package wasm_test

// rssBound is the peak RSS the adversarial modules may drive the test
// process to (the race detector's shadow memory included).
const rssBound = 4 << 30

// stackRSSGrowth is how far one runaway recursion may raise the peak
// RSS: the engine's call stack stops growing past its ceiling (docs),
// the race detector's shadow memory included.
const stackRSSGrowth = 1 << 30
