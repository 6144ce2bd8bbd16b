package wasm

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"time"

	"github.com/corral-rt/corral/hostabi"
)

// guestClock answers the guest's WASI clocks and random source from the
// host: the wall clock is host.now (journaled by the dispatcher; the Unix
// epoch when the call may not read the clock), the monotonic clock is a
// counter that moves only when read or slept on, and random bytes come
// from a ChaCha8 stream seeded once per instance from host.random (from
// the run and node ids when the call may not read it). A guest's runtime
// is therefore as deterministic as its host.
type guestClock struct {
	inst *instance
	mono int64
	rng  *rand.ChaCha8
}

// monoStep is how far the monotonic clock moves at each reading.
const monoStep = int64(time.Microsecond)

func (c *guestClock) walltime() (sec int64, nsec int32) {
	st := c.inst.current()
	if st == nil || st.inv.ABI == nil {
		return 0, 0
	}
	res, err := st.inv.ABI.Call(st.ctx, hostabi.FuncNow, nil)
	if err != nil {
		return 0, 0
	}
	var v struct {
		UnixMS int64 `json:"unix_ms"`
	}
	if json.Unmarshal(res, &v) != nil {
		return 0, 0
	}
	t := time.UnixMilli(v.UnixMS)
	return t.Unix(), int32(t.Nanosecond())
}

func (c *guestClock) nanotime() int64 {
	c.mono += monoStep
	return c.mono
}

func (c *guestClock) nanosleep(ns int64) {
	if ns > 0 {
		c.mono += ns
	}
}

// Read fills p with the instance's random stream.
func (c *guestClock) Read(p []byte) (int, error) {
	if c.rng == nil {
		c.rng = rand.NewChaCha8(c.seed())
	}
	return c.rng.Read(p)
}

// seed reads host.random once; without it the stream is seeded from the
// run and the node.
func (c *guestClock) seed() [32]byte {
	h := sha256.New()
	st := c.inst.current()
	if st != nil && st.inv.ABI != nil {
		_, _ = h.Write([]byte(st.inv.Run.RunID + "\x00" + st.inv.Node))
		if res, err := st.inv.ABI.Call(st.ctx, hostabi.FuncRandom, nil); err == nil {
			var f float64
			if json.Unmarshal(res, &f) == nil {
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], math.Float64bits(f))
				_, _ = h.Write(b[:])
			}
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}
