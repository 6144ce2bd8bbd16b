package main

import (
	crand "crypto/rand"
	"encoding/hex"
	"math/rand/v2"
	"time"

	"github.com/corral-rt/corral/hostabi/guest"
)

// wasi reads the guest's own clock and random sources, the ones WASI
// gives the Go runtime, without any host call of its own.
//
//go:wasmexport wasi
func wasi(p, n uint32) {
	guest.Run(p, n, func(guest.Input) (guest.Output, error) {
		start := time.Now()
		time.Sleep(10 * time.Millisecond)
		b := make([]byte, 16)
		_, _ = crand.Read(b)
		return guest.Output{Vars: map[string]any{
			"now":     start.UnixMilli(),
			"later":   time.Now().UnixMilli(),
			"slept":   time.Since(start) >= 10*time.Millisecond,
			"crypto":  hex.EncodeToString(b),
			"math":    []uint64{rand.Uint64(), rand.Uint64()},
			"offset":  offset(start),
			"default": time.Unix(0, 0).Format(time.RFC3339),
		}}, nil
	})
}

func offset(t time.Time) int {
	_, off := t.Zone()
	return off
}
