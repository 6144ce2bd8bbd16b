package js

import "github.com/corral-rt/corral/sandbox"

// writeBoard makes a board write of the script through the call's view of
// the board, and stops the call with a max_board_bytes LimitError, the
// write not made, when it would make the board larger than the limit.
func (c *call) writeBoard(w sandbox.Write) {
	if _, ok := c.board.Write(w, c.limits.MaxBoardBytes); !ok {
		c.abort(c.limitError(sandbox.LimitBoardBytes))
	}
}
