package proc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/corral-rt/corral/sandbox"
)

// A result frame's values are JSON that the parent decodes into Go values
// (map[string]any, []any, strings, numbers), and a JSON byte pair can
// become an interface slot and a slice header: `[[],[],...]` costs the
// parent some fifteen times its bytes. A worker whose script escaped its
// runner could send such a frame up to the frame bound, so before the
// parent decodes a value it scans its text (scanValue, which allocates
// nothing) for two numbers: its size as the runner measures max_value_bytes
// (the JSON text JSON.stringify writes: no HTML escapes, no whitespace),
// and a low estimate of the heap its decoded form takes. A frame whose
// values would cost more than the call's decoding budget, or whose write
// or evaluation value is past the call's max_value_bytes, is malformed.

// budget bounds what decoding one result frame may cost the parent.
type budget struct {
	// maxValue is the call's max_value_bytes: a var's value and an
	// evaluation's value are held to it as the runner holds them.
	maxValue int64
	// cost is the heap, in bytes as scanValue estimates it, that the
	// frame's values may take once decoded; left is what is left of it.
	cost, left int64
}

// newBudget is the decoding budget of a call under limits (defaults
// filled in) on a worker capped at workerCap bytes (0: no cap). The
// values a runner returns live in the worker's heap, held to memory_bytes
// by its watchdog and to the worker's cap by the kernel, and scanValue
// counts no more than their heap there: a budget of twice the smaller
// leaves room for the watchdog's late look and never refuses the values
// of a call that kept its limits.
func newBudget(limits sandbox.Limits, workerCap int64) *budget {
	cost := 2 * limits.MemoryBytes
	if workerCap > 0 {
		cost = min(cost, workerCap)
	}
	return &budget{maxValue: limits.MaxValueBytes, cost: cost, left: cost}
}

// charge takes the cost of a value from the budget, or fails.
func (b *budget) charge(cost int64) error {
	if cost > b.left {
		return fmt.Errorf("the frame's values would take more than its decoding budget of %d bytes (twice the call's memory_bytes, at most the worker's cap)", b.cost)
	}
	b.left -= cost
	return nil
}

// value decodes the next value into v as json does, and returns its
// measure; with a budget, the value's text is scanned first and its cost
// charged, so that a value past the budget is refused before it is
// decoded (the measure is then 0: nothing is measured without a budget).
func (d *dec) value(v any) int64 {
	if d.budget == nil {
		d.json(v)
		return 0
	}
	p := d.raw()
	if d.err != nil || len(p) == 0 {
		return 0
	}
	measure, cost, err := scanValue(p)
	if err == nil {
		err = d.budget.charge(cost)
	}
	if err == nil {
		err = json.Unmarshal(p, v)
	}
	if err != nil {
		d.err = err
		return 0
	}
	return measure
}

// The estimated heap of a decoded value, each a floor of what Go takes.
const (
	slotCost   = 16 // the interface a value sits in (the top value, an element, a member's value)
	stringCost = 16 // a non-empty string's header (boxed in its interface, or a map key's)
	arrayCost  = 24 // a []any's header, boxed in its interface
	objectCost = 48 // a map's header
	// maxScanDepth is encoding/json's own nesting bound.
	maxScanDepth = 10000
)

var errScan = errors.New("not a JSON value")

// scanValue reads the JSON text p without allocating and returns its size
// as the runner measures a value (JSON.stringify's text: what p would be
// written with no whitespace, strings escaping only '"', '\\' and control
// characters, numbers with no leading zeros in their exponent) and a low
// estimate of the heap encoding/json takes to decode it into an any. It
// fails on some text that is not JSON; text it accepts may still be
// refused by the decoder, which checks it whole.
func scanValue(p []byte) (measure, cost int64, err error) {
	// open holds, a bit a level, whether each open container is an object,
	// for the first 64 levels; deeper levels are told by depth and deep.
	var open uint64
	var deep [maxScanDepth/64 + 1]uint64
	depth := 0
	inObject := func() bool {
		if depth == 0 {
			return false
		}
		i := depth - 1
		if i < 64 {
			return open>>i&1 == 1
		}
		return deep[i/64]>>(i%64)&1 == 1
	}
	key := false // the next string is an object's key
	values := 0  // values at the top level
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		case ',':
			measure++
			i++
			key = inObject()
			continue
		case ':':
			measure++
			i++
			continue
		case ']', '}':
			if depth == 0 || inObject() != (c == '}') {
				return 0, 0, errScan
			}
			depth--
			measure++
			i++
			key = false
			continue
		}
		if depth == 0 {
			if values++; values > 1 {
				return 0, 0, errScan
			}
		}
		if !key {
			cost += slotCost
		}
		switch {
		case c == '{' || c == '[':
			if depth >= maxScanDepth {
				return 0, 0, errScan
			}
			bit := uint64(0)
			cost += arrayCost
			if c == '{' {
				bit = 1
				cost += objectCost - arrayCost
			}
			if depth < 64 {
				open = open&^(1<<depth) | bit<<depth
			} else {
				deep[depth/64] = deep[depth/64]&^(1<<(depth%64)) | bit<<(depth%64)
			}
			depth++
			measure++
			i++
			key = c == '{'
			continue
		case c == '"':
			n, m, bytes, ok := scanString(p[i:])
			if !ok {
				return 0, 0, errScan
			}
			measure += m
			if bytes > 0 {
				cost += stringCost + bytes
			}
			i += n
		case c == 't' || c == 'n':
			if len(p)-i < 4 {
				return 0, 0, errScan
			}
			measure += 4
			i += 4
		case c == 'f':
			measure += 5
			i += 5
		case c == '-' || c >= '0' && c <= '9':
			n, m := scanNumber(p[i:])
			measure += m
			i += n
		default:
			return 0, 0, errScan
		}
		key = false
	}
	if depth != 0 || values != 1 {
		return 0, 0, errScan
	}
	return measure, cost, nil
}

// scanString reads the string p starts with: it returns the bytes the
// string takes in p, its measure (quotes included, each character escaped
// as JSON.stringify escapes it), the bytes it decodes to, and false when
// p ends before the string does.
func scanString(p []byte) (n int, measure, bytes int64, ok bool) {
	measure = 2
	for i := 1; i < len(p); {
		c := p[i]
		switch {
		case c == '"':
			return i + 1, measure, bytes, true
		case c == '\\':
			if i+1 >= len(p) {
				return 0, 0, 0, false
			}
			if p[i+1] != 'u' {
				// \" \\ \/ \b \f \n \r \t: one byte, "/" written bare.
				bytes++
				if p[i+1] == '/' {
					measure++
				} else {
					measure += 2
				}
				i += 2
				continue
			}
			if i+6 > len(p) {
				return 0, 0, 0, false
			}
			r := hex4(p[i+2 : i+6])
			i += 6
			switch {
			case r < 0:
				return 0, 0, 0, false
			case r == '"' || r == '\\' || r == '\b' || r == '\f' || r == '\n' || r == '\r' || r == '\t':
				measure += 2
				bytes++
			case r < 0x20:
				measure += 6
				bytes++
			case r < 0x80:
				measure++
				bytes++
			case r < 0x800:
				measure += 2
				bytes += 2
			case r >= 0xd800 && r < 0xdc00 && i+6 <= len(p) && p[i] == '\\' && p[i+1] == 'u' &&
				hex4(p[i+2:i+6]) >= 0xdc00 && hex4(p[i+2:i+6]) < 0xe000:
				// a surrogate pair: a character past U+FFFF
				measure += 4
				bytes += 4
				i += 6
			default: // a lone surrogate half decodes to U+FFFD
				measure += 3
				bytes += 3
			}
		default:
			measure++
			bytes++
			i++
		}
	}
	return 0, 0, 0, false
}

// hex4 is the value of four hex digits, or -1.
func hex4(p []byte) int {
	v := 0
	for _, c := range p {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return v
}

// scanNumber reads the number p starts with and returns its length in p
// and its measure: the length of the text JSON.stringify writes for it
// (shortest digits as p has them, fixed from 1e-6 up to 1e21, exponent
// form outside, "-0" as "0"), found from its digits without parsing it.
func scanNumber(p []byte) (n int, measure int64) {
	neg := n < len(p) && p[n] == '-'
	if neg {
		n++
	}
	// The value is 0.D × 10^dp, D its nd significant digits.
	nd, dp, trailing := 0, 0, 0
	point := false
	for ; n < len(p); n++ {
		c := p[n]
		if c == '.' && !point {
			point = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		if nd == 0 && c == '0' {
			if point {
				dp--
			}
			continue
		}
		nd++
		if !point {
			dp++
		}
		if c == '0' {
			trailing++
		} else {
			trailing = 0
		}
	}
	if n < len(p) && (p[n] == 'e' || p[n] == 'E') {
		n++
		sign := 1
		if n < len(p) && (p[n] == '+' || p[n] == '-') {
			if p[n] == '-' {
				sign = -1
			}
			n++
		}
		e := 0
		for ; n < len(p) && p[n] >= '0' && p[n] <= '9'; n++ {
			e = min(e*10+int(p[n]-'0'), 1<<20) // past any float's exponent
		}
		dp += sign * e
	}
	nd -= trailing
	if nd == 0 {
		return n, 1 // 0, and -0
	}
	switch {
	case dp < -5 || dp > 21: // d[.ddd]e±x
		measure = int64(nd) + 2 + int64(len(strconv.Itoa(abs(dp-1))))
		if nd > 1 {
			measure++
		}
	case dp <= 0: // 0.000ddd
		measure = int64(2 - dp + nd)
	case dp < nd: // dd.ddd
		measure = int64(nd + 1)
	default: // ddd000
		measure = int64(dp)
	}
	if neg {
		measure++
	}
	return n, measure
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
