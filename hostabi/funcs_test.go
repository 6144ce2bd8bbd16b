package hostabi_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 5.4: drainSteer → array of message wire objects, consuming
// the turn's queue; an idle round gives [].
func TestDrainSteer(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := newDispatcher(r.fullHost(), []string{agent.CapSteer}, nil, sandbox.Limits{})
	out, err := call(t, d, hostabi.FuncDrainSteer, `[]`)
	require.NoError(t, err)
	assert.Equal(t, `[]`, string(out))

	msgs := []message.Message{
		message.NewTextMessage(message.RoleUser, "also check Lyon"),
		{Role: message.RoleUser, Metadata: map[string]string{"k": "v"},
			Parts: []message.Part{message.DataPart(json.RawMessage(`{"a":1}`), "application/json")}},
	}
	r.steer = message.CloneAll(msgs)
	out, err = call(t, d, hostabi.FuncDrainSteer, ``)
	require.NoError(t, err)
	var raws []json.RawMessage
	require.NoError(t, json.Unmarshal(out, &raws))
	require.Len(t, raws, 2)
	for i, raw := range raws {
		m, err := message.Decode(raw)
		require.NoError(t, err, "each element is a message wire object")
		assert.Equal(t, msgs[i].Text(), m.Text())
		assert.Equal(t, msgs[i].Metadata, m.Metadata)
	}

	out, err = call(t, d, hostabi.FuncDrainSteer, `[]`)
	require.NoError(t, err)
	assert.Equal(t, `[]`, string(out), "the queue was consumed")
}

// REF 5.4: checkInterrupt → {cause, detail} or null, a non-blocking
// poll that remembers what it saw.
func TestCheckInterrupt(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	latch := &hostabi.InterruptLatch{}
	cfg := hostabi.Config{Host: r.fullHost(), Run: testRun(nil), Node: "n1", Interrupts: latch}
	d := hostabi.NewDispatcher(cfg)
	out, err := call(t, d, hostabi.FuncCheckInterrupt, `[]`)
	require.NoError(t, err)
	assert.Equal(t, `null`, string(out))

	r.interrupts <- agent.Interrupt{Cause: agent.CauseUserInput, Detail: "new message"}
	for range 3 {
		out, err = call(t, d, hostabi.FuncCheckInterrupt, `[]`)
		require.NoError(t, err)
		assert.JSONEq(t, `{"cause":"user_input","detail":"new message"}`, string(out))
	}
	assert.Empty(t, r.interrupts, "taken from the host once")

	// The latch is shared: the engine and the next node see it too.
	seen, ok := latch.Seen()
	require.True(t, ok)
	assert.Equal(t, agent.CauseUserInput, seen.Cause)
	cfg.Node = "n2"
	out, err = call(t, hostabi.NewDispatcher(cfg), hostabi.FuncCheckInterrupt, `[]`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"cause":"user_input","detail":"new message"}`, string(out))

	// Without detail the key is still there.
	r2 := newRecorder()
	r2.interrupts <- agent.Interrupt{Cause: agent.CauseUserCancel}
	out, err = call(t, newDispatcher(r2.fullHost(), nil, nil, sandbox.Limits{}), hostabi.FuncCheckInterrupt, `[]`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"cause":"user_cancel","detail":""}`, string(out))
}

func TestInterruptLatch(t *testing.T) {
	t.Parallel()
	var l hostabi.InterruptLatch
	_, ok := l.Poll(nil)
	assert.False(t, ok, "a nil channel never fires")
	closed := make(chan agent.Interrupt)
	close(closed)
	_, ok = l.Poll(closed)
	assert.False(t, ok, "a closed channel never fires")
	_, ok = l.Seen()
	assert.False(t, ok)

	ch := make(chan agent.Interrupt, 2)
	ch <- agent.Interrupt{Cause: agent.CauseHostShutdown}
	ch <- agent.Interrupt{Cause: agent.CauseCustom}
	intr, ok := l.Poll(ch)
	require.True(t, ok)
	assert.Equal(t, agent.CauseHostShutdown, intr.Cause)
	intr, ok = l.Poll(ch)
	require.True(t, ok)
	assert.Equal(t, agent.CauseHostShutdown, intr.Cause, "the first one is remembered")
	assert.Len(t, ch, 1)
}

// Wait takes an interrupt from the channel and remembers it before it
// returns, returns false once stopped, and returns an interrupt another
// poller remembered.
func TestInterruptLatchWait(t *testing.T) {
	t.Parallel()
	var l hostabi.InterruptLatch
	stop := make(chan struct{})
	close(stop)
	_, ok := l.Wait(stop, make(chan agent.Interrupt))
	assert.False(t, ok, "stopped")

	ch := make(chan agent.Interrupt, 1)
	ch <- agent.Interrupt{Cause: agent.CauseUserCancel}
	intr, ok := l.Wait(nil, ch)
	require.True(t, ok)
	assert.Equal(t, agent.CauseUserCancel, intr.Cause)
	seen, ok := l.Seen()
	require.True(t, ok, "remembered before Wait returned")
	assert.Equal(t, intr, seen)

	var other hostabi.InterruptLatch
	done := make(chan agent.Interrupt)
	go func() {
		intr, _ := other.Wait(nil, nil)
		done <- intr
	}()
	pollCh := make(chan agent.Interrupt, 1)
	pollCh <- agent.Interrupt{Cause: agent.CauseHostShutdown}
	_, ok = other.Poll(pollCh)
	require.True(t, ok)
	assert.Equal(t, agent.CauseHostShutdown, (<-done).Cause, "another poller's interrupt ends the wait")
}

// An interrupt sent before a Poll is seen by it even when a Wait in
// progress took it from the channel first and has not yet remembered it:
// the engine's wave watcher (a Wait) took the interrupt a script's
// checkInterrupt was to see, and on a loaded machine the script's poll,
// made after the host's Interrupt returned, answered null. Many rounds,
// since the window is a few instructions wide.
func TestInterruptLatchPollSeesWhatAWaitTook(t *testing.T) {
	t.Parallel()
	for i := range 20000 {
		var l hostabi.InterruptLatch
		ch := make(chan agent.Interrupt, 1)
		stop := make(chan struct{})
		waited := make(chan struct{})
		go func() {
			defer close(waited)
			l.Wait(stop, ch)
		}()
		ch <- agent.Interrupt{Cause: agent.CauseCustom, Detail: "x"}
		_, ok := l.Poll(ch)
		close(stop)
		<-waited
		require.True(t, ok, "round %d: the poll missed an interrupt sent before it", i)
	}
}

// REF 5.4: askUser({parts,schema,source,metadata}) → {parts,metadata};
// the prompt is decoded strictly (REF 9.9).
func TestAskUser(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.reply = agent.UserReply{Parts: []message.Part{message.TextPart("blue")}, Metadata: map[string]string{"via": "cli"}}
	d := newDispatcher(r.fullHost(), []string{agent.CapAskUser}, nil, sandbox.Limits{})
	out, err := call(t, d, hostabi.FuncAskUser, `[{"parts":[{"type":"text","text":"colour?"},
		{"type":"data","data":{"choices":["red","blue"]}}],
		"schema":{"type":"string"},"source":"form","metadata":{"k":"v"}}]`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"parts":[{"type":"text","text":"blue"}],"metadata":{"via":"cli"}}`, string(out))
	require.Len(t, r.prompts, 1)
	p := r.prompts[0]
	assert.Equal(t, "colour?", p.Parts[0].Text)
	assert.JSONEq(t, `{"choices":["red","blue"]}`, string(p.Parts[1].Data))
	assert.JSONEq(t, `{"type":"string"}`, string(p.Schema))
	assert.Equal(t, "form", p.Source)
	assert.Equal(t, map[string]string{"k": "v"}, p.Metadata)

	_, err = call(t, d, hostabi.FuncAskUser, `[{"parts":[{"type":"text","text":"q"}],"schema":null}]`)
	require.NoError(t, err)
	assert.Nil(t, r.prompts[1].Schema, "a null schema is no schema")

	r.reply = agent.UserReply{}
	out, err = call(t, d, hostabi.FuncAskUser, goodArgs()[hostabi.FuncAskUser])
	require.NoError(t, err)
	assert.JSONEq(t, `{"parts":[]}`, string(out), "parts is always an array")

	bad := map[string]string{
		"no parts":           `[{}]`,
		"empty parts":        `[{"parts":[]}]`,
		"parts not an array": `[{"parts":{"type":"text"}}]`,
		"unknown part type":  `[{"parts":[{"type":"image","text":"x"}]}]`,
		"unknown part field": `[{"parts":[{"type":"text","text":"x","url":"u"}]}]`,
		"foreign part field": `[{"parts":[{"type":"text","text":"x","mime_type":"a/b"}]}]`,
		"tool result part":   `[{"parts":[{"type":"tool_result","tool_result":{"tool_call_id":"c","content":""}}]}]`,
		"data part no data":  `[{"parts":[{"type":"data"}]}]`,
		"metadata not text":  `[{"parts":[{"type":"text","text":"x"}],"metadata":{"k":1}}]`,
		"source not text":    `[{"parts":[{"type":"text","text":"x"}],"source":1}]`,
		"unknown field":      `[{"parts":[{"type":"text","text":"x"}],"timeout":5}]`,
		"null prompt":        `[null]`,
		"string prompt":      `["colour?"]`,
		"trailing":           `[{"parts":[{"type":"text","text":"x"}]}] {}`,
	}
	n := len(r.prompts)
	for name, args := range bad {
		_, err := call(t, d, hostabi.FuncAskUser, args)
		requireKind(t, err, fault.Validation)
		assert.Contains(t, err.Error(), "host askUser", name)
	}
	assert.Len(t, r.prompts, n, "a malformed prompt never reaches the host")

	r.askErr = fault.New(fault.NotAvailable, "ask user", "no user attached")
	_, err = call(t, d, hostabi.FuncAskUser, goodArgs()[hostabi.FuncAskUser])
	requireKind(t, err, fault.NotAvailable)
	assert.Contains(t, err.Error(), "no user attached")
}

// REF 6.1.1: a BudgetExceeded answer to usage reaches the script;
// other usage errors are only for observability.
func TestReportUsage(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := newDispatcher(r.fullHost(), []string{agent.CapUsage}, nil, sandbox.Limits{})
	out, err := call(t, d, hostabi.FuncReportUsage, `[{"input":10,"output":5,"total":15}]`)
	require.NoError(t, err)
	assert.Equal(t, `null`, string(out))
	_, err = call(t, d, hostabi.FuncReportUsage, `[{}]`)
	require.NoError(t, err)
	assert.Equal(t, []agent.Usage{{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}, {}}, r.usage)

	r.usageErr = fault.New(fault.Internal, "usage", "meter offline")
	out, err = call(t, d, hostabi.FuncReportUsage, `[{"input":1}]`)
	require.NoError(t, err)
	assert.Equal(t, `null`, string(out))

	r.usageErr = fault.New(fault.BudgetExceeded, "usage", "token budget spent")
	_, err = call(t, d, hostabi.FuncReportUsage, `[{"input":1}]`)
	requireKind(t, err, fault.BudgetExceeded)
	assert.Contains(t, err.Error(), "token budget spent")
}

func TestNow(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := newDispatcher(r.fullHost(), nil, nil, sandbox.Limits{})
	out, err := call(t, d, hostabi.FuncNow, `[]`)
	require.NoError(t, err)
	assert.Equal(t, `{"unix_ms":1700000000123,"iso":"2023-11-14T22:13:20.123Z"}`, string(out))
	var res hostabi.NowResult
	require.NoError(t, json.Unmarshal(out, &res))
	assert.True(t, res.Time().Equal(r.now))
	parsed, err := time.Parse(time.RFC3339, res.ISO)
	require.NoError(t, err)
	assert.Equal(t, res.UnixMS, parsed.UnixMilli())

	// Another zone is written in UTC; sub-millisecond digits are cut.
	r.now = time.Date(2024, 2, 29, 1, 2, 3, 999_999, time.FixedZone("X", 3*3600))
	out, err = call(t, d, hostabi.FuncNow, `[]`)
	require.NoError(t, err)
	assert.JSONEq(t, `{"unix_ms":1709157723000,"iso":"2024-02-28T22:02:03.000Z"}`, string(out))

	r.now = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err = call(t, d, hostabi.FuncNow, `[]`)
	requireKind(t, err, fault.Internal)
}

func TestRandom(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := newDispatcher(r.fullHost(), nil, nil, sandbox.Limits{})
	for _, v := range []float64{0, 0.25, 1e-9, math.Nextafter(1, 0)} {
		r.rnd = v
		out, err := call(t, d, hostabi.FuncRandom, `[]`)
		require.NoError(t, err)
		var got float64
		require.NoError(t, json.Unmarshal(out, &got))
		assert.Equal(t, v, got)
	}
	for _, v := range []float64{1, -0.5, math.NaN(), math.Inf(1)} {
		r.rnd = v
		_, err := call(t, d, hostabi.FuncRandom, `[]`)
		requireKind(t, err, fault.Internal)
	}
}

func TestLog(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	d := newDispatcher(r.fullHost(), nil, nil, sandbox.Limits{})
	for _, args := range []string{`["debug","a"]`, `["info","b",{"n":1,"s":"x"}]`, `["warn","c",null]`, `["error",""]`} {
		out, err := call(t, d, hostabi.FuncLog, args)
		require.NoError(t, err, args)
		assert.Equal(t, `null`, string(out))
	}
	assert.Equal(t, []logLine{
		{"debug", "a", nil}, {"info", "b", map[string]any{"n": 1.0, "s": "x"}}, {"warn", "c", nil}, {"error", "", nil},
	}, r.logLines())
	for _, args := range []string{`["INFO","x"]`, `["trace","x"]`, `[1,"x"]`, `["info",null]`, `["info","x","y"]`} {
		_, err := call(t, d, hostabi.FuncLog, args)
		requireKind(t, err, fault.Validation)
	}
}
