//go:build race

package proc_test

const raceEnabled = true
