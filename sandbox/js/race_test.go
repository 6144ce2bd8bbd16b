//go:build race

package js_test

// rssBound is the peak RSS the adversarial scripts may drive the test
// process to; the race detector multiplies memory use.
const rssBound = 4 << 30
