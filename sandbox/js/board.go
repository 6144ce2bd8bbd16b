package js

import "github.com/corral-rt/corral/sandbox"

// growBoard checks a board write that would make the board after bytes
// (what c.meter returned for it) and stops the call with a
// max_board_bytes LimitError when that is past the limit; the write must
// not happen then. Otherwise the caller makes the write and the meter
// keeps the new size.
func (c *call) growBoard(after int64) {
	if max := c.limits.MaxBoardBytes; max > 0 && after > max {
		c.abort(c.limitError(sandbox.LimitBoardBytes))
	}
	c.meter.Commit(after)
}
