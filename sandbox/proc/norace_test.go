//go:build !race

package proc_test

const raceEnabled = false
