package hostabi_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// record runs the calls on a dispatcher over a live host and returns the
// journal's entries.
func record(t *testing.T, r *recorder, calls [][2]string) []hostabi.Entry {
	t.Helper()
	j := hostabi.NewJournal()
	d := newDispatcher(r.fullHost(), allCaps(), j, sandbox.Limits{})
	for _, c := range calls {
		_, _ = call(t, d, c[0], c[1])
	}
	return j.Entries()
}

// REF 10.2.1: a replaying journal answers every non-deterministic call
// from the recording and never asks the host: the host's clock, random
// source, steer queue and user all changed, and the script still sees
// the recorded answers, and the replay's journal equals the recording.
func TestReplayJournalAnswersFromTheRecording(t *testing.T) {
	t.Parallel()
	calls := [][2]string{
		{hostabi.FuncNow, `[]`}, {hostabi.FuncRandom, `[]`}, {hostabi.FuncDrainSteer, `[]`},
		{hostabi.FuncAskUser, `[{"parts":[{"type":"text","text":"ok?"}]}]`}, {hostabi.FuncEmit, `["token","x"]`},
	}
	live := newRecorder()
	live.steer = []message.Message{message.NewTextMessage(message.RoleUser, "hurry")}
	recorded := record(t, live, calls)

	changed := newRecorder()
	changed.rnd, changed.now = 0.75, changed.now.AddDate(1, 0, 0)
	changed.reply.Parts = []message.Part{message.TextPart("no")}
	j := hostabi.NewReplayJournal(recorded)
	require.True(t, j.Replaying())
	d := newDispatcher(changed.fullHost(), allCaps(), j, sandbox.Limits{})
	var got []string
	for _, c := range calls {
		res, err := call(t, d, c[0], c[1])
		require.NoError(t, err)
		got = append(got, string(res))
	}
	assert.Equal(t, `0.25`, got[1])
	assert.Contains(t, got[2], "hurry")
	assert.Contains(t, got[3], `"yes"`)
	assert.Empty(t, changed.prompts, "the user was never asked")
	assert.Equal(t, recorded, j.Entries())
	assert.Nil(t, j.Divergence())
	assert.Empty(t, j.Unanswered())
}

// REF 10.2.2: a reordered call, other arguments and a call past the
// recording fail closed with a *DivergenceError naming the node and the
// call; the first is kept.
func TestReplayJournalDivergences(t *testing.T) {
	t.Parallel()
	recorded := record(t, newRecorder(), [][2]string{{hostabi.FuncNow, `[]`}, {hostabi.FuncRandom, `[]`},
		{hostabi.FuncAskUser, `[{"parts":[{"type":"text","text":"ok?"}]}]`}})
	for name, tc := range map[string]struct {
		calls      [][2]string
		call       int
		fn, want   string
		noneLeft   bool
		unanswered int
	}{
		"reordered": {calls: [][2]string{{hostabi.FuncRandom, `[]`}}, call: 1, fn: "random", want: "now", unanswered: 2},
		"other args": {calls: [][2]string{{hostabi.FuncNow, `[]`}, {hostabi.FuncRandom, `[]`},
			{hostabi.FuncAskUser, `[{"parts":[{"type":"text","text":"sure?"}]}]`}}, call: 3, fn: "askUser", want: "askUser"},
		"past the end": {calls: [][2]string{{hostabi.FuncNow, `[]`}, {hostabi.FuncRandom, `[]`},
			{hostabi.FuncAskUser, `[{"parts":[{"type":"text","text":"ok?"}]}]`}, {hostabi.FuncNow, `[]`}},
			call: 4, fn: "now", noneLeft: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j := hostabi.NewReplayJournal(recorded)
			d := newDispatcher(newRecorder().fullHost(), allCaps(), j, sandbox.Limits{})
			var last error
			for _, c := range tc.calls {
				_, last = call(t, d, c[0], c[1])
			}
			var div *hostabi.DivergenceError
			require.True(t, errors.As(last, &div), "%v", last)
			assert.True(t, fault.Is(last, fault.Validation))
			assert.Equal(t, "n1", div.Node)
			assert.Equal(t, tc.call, div.Call)
			assert.Equal(t, tc.fn, div.Func)
			if tc.noneLeft {
				assert.Nil(t, div.Want)
				assert.Contains(t, div.Error(), "no more inputs")
			} else {
				require.NotNil(t, div.Want)
				assert.Equal(t, tc.want, div.Want.Func)
			}
			assert.Same(t, div, j.Divergence())
			assert.Len(t, j.Unanswered(), tc.unanswered)
		})
	}
}

// REF 10.3.1: a fork's journal answers inputs after the substituted one
// by function alone, and those before it strictly.
func TestForkJournal(t *testing.T) {
	t.Parallel()
	entries := []hostabi.Entry{
		{Seq: 1, Node: "a", Func: "tool", Args: json.RawMessage(`[1]`), Result: json.RawMessage(`"x"`)},
		{Seq: 2, Node: "a", Func: "inference", Args: json.RawMessage(`[{"digest":"d1"}]`), Result: json.RawMessage(`{}`)},
	}
	j := hostabi.NewForkJournal(entries, 1)
	_, err := j.Answer("a", "tool", json.RawMessage(`[2]`))
	require.Error(t, err, "the substituted input's own call is compared")
	j = hostabi.NewForkJournal(entries, 1)
	_, err = j.Answer("a", "tool", json.RawMessage(`[1]`))
	require.NoError(t, err)
	e, err := j.Answer("a", "inference", json.RawMessage(`[{"digest":"d2"}]`))
	require.NoError(t, err)
	assert.Equal(t, 2, e.Seq)
	_, err = hostabi.NewJournal().Answer("a", "tool", nil)
	assert.True(t, fault.Is(err, fault.Internal), "a journal that is not replaying answers nothing")
}

// REF 10.2.10: a divergence names both the node's input number and the
// call's number among all the host ABI calls of the node's run.
func TestDivergenceNamesTheHostCall(t *testing.T) {
	t.Parallel()
	recorded := record(t, newRecorder(), [][2]string{{hostabi.FuncNow, `[]`}, {hostabi.FuncRandom, `[]`}})
	j := hostabi.NewReplayJournal(recorded)
	d := newDispatcher(newRecorder().fullHost(), allCaps(), j, sandbox.Limits{})
	_, err := call(t, d, hostabi.FuncEmit, `["token","a"]`)
	require.NoError(t, err)
	_, err = call(t, d, hostabi.FuncNow, `[]`)
	require.NoError(t, err)
	_, err = call(t, d, hostabi.FuncEmit, `["token","b"]`)
	require.NoError(t, err)
	_, err = call(t, d, hostabi.FuncNow, `[]`) // the recording has random here
	var div *hostabi.DivergenceError
	require.ErrorAs(t, err, &div)
	assert.Equal(t, 2, div.Call, "the node's second input")
	assert.Equal(t, 4, div.HostCall, "the node's fourth host call")
	assert.Equal(t, div, j.Divergence())
}
