package replay_test

import (
	"testing"

	"github.com/corral-rt/corral/replay/replaytest"
)

// REF 10.2.1: a recorded turn replays identically: its clock, random numbers (host
// and Math.random, Date), prompt answer and model reply come from the
// recording.
func TestReplayDice(t *testing.T) {
	t.Parallel()
	replaytest.Run(t, "testdata/replay/dice.jsonl")
}
