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
// host. The wall clock is host.now read once per call (journaled by the
// dispatcher; the Unix epoch when the call may not read the clock); later
// readings in the same call are that instant plus how far the monotonic
// clock has moved since, so a guest that reads the clock in a loop costs
// one journal entry per call, not one per reading. The monotonic clock is
// a counter that moves only when read or slept on. Random bytes come from
// a ChaCha8 stream seeded once per instance from host.random (from the run
// and node ids when the call may not read it). A guest's runtime is
// therefore as deterministic as its host.
type guestClock struct {
	inst *instance
	mono int64
	rng  *rand.ChaCha8

	wallCall *callState // the call wallBase was read for
	wallBase time.Time  // the host's clock at the call's first reading
	wallMono int64      // mono at that reading
}

// monoStep is how far the monotonic clock moves at each reading.
const monoStep = int64(time.Microsecond)

func (c *guestClock) walltime() (sec int64, nsec int32) {
	st := c.inst.current()
	if st == nil {
		return 0, 0
	}
	if c.wallCall != st {
		c.wallCall, c.wallBase, c.wallMono = st, hostNow(st), c.mono
	}
	t := c.wallBase.Add(time.Duration(c.mono - c.wallMono))
	c.mono += monoStep
	return t.Unix(), int32(t.Nanosecond())
}

// hostNow is host.now for the call st, or the Unix epoch when the call
// may not read the clock.
func hostNow(st *callState) time.Time {
	epoch := time.Unix(0, 0)
	if st.inv.ABI == nil {
		return epoch
	}
	res, err := st.inv.ABI.Call(st.ctx, hostabi.FuncNow, nil)
	if err != nil {
		return epoch
	}
	var v struct {
		UnixMS int64 `json:"unix_ms"`
	}
	if json.Unmarshal(res, &v) != nil {
		return epoch
	}
	return time.UnixMilli(v.UnixMS)
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
