package replay_test

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/replay/replaytest"
	"github.com/stretchr/testify/require"
)

// REF 10.2.1: a recorded turn replays identically: its clock, random numbers (host
// and Math.random, Date), prompt answer and model reply come from the
// recording.
func TestReplayDice(t *testing.T) {
	t.Parallel()
	replaytest.Run(t, "testdata/replay/dice.jsonl")
}

// badFixtures are derived from dice.jsonl: each replays the dice turn
// against a changed document (bad-reordered, bad-changed-line,
// bad-model-request) or lacks one of its inputs (bad-missing-input).
var badFixtures = map[string]func(*replay.Recording){
	"bad-reordered":     func(r *replay.Recording) { r.Header.Document = "bad-reordered/deploy.yaml" },
	"bad-changed-line":  func(r *replay.Recording) { r.Header.Document = "bad-changed-line/deploy.yaml" },
	"bad-model-request": func(r *replay.Recording) { r.Header.Document = "bad-model-request/deploy.yaml" },
	"bad-missing-input": func(r *replay.Recording) {
		// Drop the roll node's last clock reading, and number the rest again.
		last := -1
		for i, in := range r.Inputs {
			if in.Node == "roll" && in.Func == "now" {
				last = i
			}
		}
		if last < 0 {
			return
		}
		r.Inputs = append(r.Inputs[:last], r.Inputs[last+1:]...)
		for i := range r.Inputs {
			r.Inputs[i].N = i + 1
		}
	},
}

// The bad-* fixtures are what their derivation makes of the current
// dice.jsonl, so a re-recorded dice turn cannot leave them stale. With
// -update they are written again (record dice.jsonl first:
// go test -run TestReplayDice -update, then -run TestBadFixtures -update).
func TestBadFixturesAreCurrent(t *testing.T) {
	data, err := os.ReadFile("testdata/replay/dice.jsonl")
	require.NoError(t, err)
	update := false
	if f := flag.Lookup("update"); f != nil {
		update = f.Value.String() == "true"
	}
	for name, derive := range badFixtures {
		rec, err := replay.DecodeBytes(data)
		require.NoError(t, err)
		derive(rec)
		want := encoded(t, rec)
		file := "testdata/replay/" + name + ".jsonl"
		if update {
			require.NoError(t, os.WriteFile(file, want, 0o644))
			continue
		}
		got, err := os.ReadFile(file)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s is not what dice.jsonl derives; run with -update", file)
	}
}
