//go:build race

package main

// raceEnabled says the tests run with the race detector: the binary the
// end-to-end tests build gets it too, and reuses the test build's cache.
const raceEnabled = true
