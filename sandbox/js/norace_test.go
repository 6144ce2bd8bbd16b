//go:build !race

package js_test

// rssBound is the peak RSS the adversarial scripts may drive the test
// process to.
const rssBound = 1 << 30
