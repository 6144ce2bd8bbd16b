package hostabi

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
)

// isoMillis is the layout of now's "iso" field: RFC 3339 in UTC with
// milliseconds, as JavaScript's Date.prototype.toISOString writes it.
const isoMillis = "2006-01-02T15:04:05.000Z"

// callNow reads the host's clock: {"unix_ms": <int>, "iso": "<RFC 3339>"}.
func callNow(_ context.Context, d *Dispatcher, _ []json.RawMessage) (json.RawMessage, error) {
	clock, _ := agent.CapabilityFromHost[agent.Clock](d.cfg.Host)
	t := clock.Now().UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fault.New(fault.Internal, "host "+FuncNow, "node %q: the clock is out of range: %d", d.cfg.Node, y)
	}
	b := make([]byte, 0, 64)
	b = append(b, `{"unix_ms":`...)
	b = strconv.AppendInt(b, t.UnixMilli(), 10)
	b = append(b, `,"iso":"`...)
	b = t.AppendFormat(b, isoMillis)
	b = append(b, `"}`...)
	return b, nil
}

// NowResult is the result of host.now(), for runners that decode it.
type NowResult struct {
	UnixMS int64  `json:"unix_ms"` // milliseconds since the Unix epoch
	ISO    string `json:"iso"`     // the same instant, RFC 3339 in UTC with milliseconds
}

// Time returns the instant in UTC.
func (r NowResult) Time() time.Time { return time.UnixMilli(r.UnixMS).UTC() }

// callRandom reads the host's random source: a number in [0, 1).
func callRandom(_ context.Context, d *Dispatcher, _ []json.RawMessage) (json.RawMessage, error) {
	src, _ := agent.CapabilityFromHost[agent.RandomSource](d.cfg.Host)
	v := src.Random()
	if !(v >= 0 && v < 1) || math.IsNaN(v) {
		return nil, fault.New(fault.Internal, "host "+FuncRandom, "node %q: the random source gave %v, not a number in [0, 1)", d.cfg.Node, v)
	}
	return strconv.AppendFloat(make([]byte, 0, 24), v, 'g', -1, 64), nil
}

// callLog writes a line to the host's log sink, within MaxLogBytes (the
// message plus the encoded attributes) per dispatcher.
func callLog(ctx context.Context, d *Dispatcher, argv []json.RawMessage) (json.RawMessage, error) {
	level, err := d.argString(FuncLog, argv, 0, "level")
	if err != nil {
		return nil, err
	}
	if !validLevel(level) {
		return nil, d.argError(FuncLog, 0, nil, "level %q is not one of debug, info, warn, error", abbreviate(level))
	}
	msg, err := d.argString(FuncLog, argv, 1, "message")
	if err != nil {
		return nil, err
	}
	var attrs map[string]any
	raw := optArg(argv, 2)
	if !isNull(raw) {
		if err := d.argObject(FuncLog, argv, 2, "attrs", &attrs); err != nil {
			return nil, err
		}
	}
	n := int64(len(msg))
	if attrs != nil {
		n += int64(len(raw))
	}
	if err := d.reserveLog(n); err != nil {
		return nil, err
	}
	sink, _ := agent.CapabilityFromHost[agent.LogSink](d.cfg.Host)
	sink.Log(ctx, level, msg, attrs)
	return jsonNull(), nil
}

// validLevel reports whether host.log accepts level.
func validLevel(level string) bool {
	switch level {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

// reserveLog counts n more log bytes, or refuses them past MaxLogBytes.
func (d *Dispatcher) reserveLog(n int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.logBytes+n > d.limits.MaxLogBytes {
		return d.limitError(sandbox.LimitLogBytes, d.limits.MaxLogBytes)
	}
	d.logBytes += n
	return nil
}
