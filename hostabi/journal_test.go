package hostabi_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 5.4: every non-deterministic answer a script gets from the
// host (clock, random, steer messages, the user's reply, an interrupt) is
// journaled in order, with its node, function, arguments and result or
// error; deterministic calls and refused calls are not.
func TestJournalRecordsNonDeterministicCalls(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	r.steer = []message.Message{message.NewTextMessage(message.RoleUser, "hurry")}
	j := hostabi.NewJournal()
	d := newDispatcher(r.fullHost(), allCaps(), j, sandbox.Limits{})
	calls := []struct{ name, args string }{
		{hostabi.FuncNow, ``},
		{hostabi.FuncEmit, `["token","x"]`},
		{hostabi.FuncRandom, `[ ]`},
		{hostabi.FuncLog, `["info","x"]`},
		{hostabi.FuncDrainSteer, `[]`},
		{hostabi.FuncPublish, `["x"]`},
		{hostabi.FuncAskUser, `[ {"parts": [{"type":"text","text":"ok?"}]} ]`},
		{hostabi.FuncCheckInterrupt, `[]`},
		{hostabi.FuncReportUsage, `[{"input":1}]`},
		{hostabi.FuncNow, `[1]`},       // malformed: never reached the host
		{"nope", `[]`},                 // unknown
		{hostabi.FuncDrainSteer, `[]`}, // now empty
	}
	for _, c := range calls {
		_, _ = call(t, d, c.name, c.args)
	}
	r.askErr = fault.New(fault.NotAvailable, "ask user", "no user")
	_, err := call(t, d, hostabi.FuncAskUser, goodArgs()[hostabi.FuncAskUser])
	require.Error(t, err)
	denied := newDispatcher(r.fullHost(), []string{}, j, sandbox.Limits{})
	_, err = call(t, denied, hostabi.FuncNow, `[]`)
	requireKind(t, err, fault.PolicyDenied)

	entries := j.Entries()
	want := []hostabi.Entry{
		{Seq: 1, Node: "n1", Func: "now", Args: json.RawMessage(`[]`),
			Result: json.RawMessage(`{"unix_ms":1700000000123,"iso":"2023-11-14T22:13:20.123Z"}`)},
		{Seq: 2, Node: "n1", Func: "random", Args: json.RawMessage(`[]`), Result: json.RawMessage(`0.25`)},
		{Seq: 3, Node: "n1", Func: "drainSteer", Args: json.RawMessage(`[]`),
			Result: json.RawMessage(`[{"role":"user","parts":[{"type":"text","text":"hurry"}]}]`)},
		{Seq: 4, Node: "n1", Func: "askUser", Args: json.RawMessage(`[{"parts":[{"type":"text","text":"ok?"}]}]`),
			Result: json.RawMessage(`{"parts":[{"type":"text","text":"yes"}]}`)},
		{Seq: 5, Node: "n1", Func: "checkInterrupt", Args: json.RawMessage(`[]`), Result: json.RawMessage(`null`)},
		{Seq: 6, Node: "n1", Func: "drainSteer", Args: json.RawMessage(`[]`), Result: json.RawMessage(`[]`)},
		{Seq: 7, Node: "n1", Func: "askUser", Args: json.RawMessage(`[{"parts":[{"type":"text","text":"continue?"}]}]`),
			Err: &hostabi.ErrorInfo{Code: "not_available", Message: `host askUser: node "n1": ask user: no user`}},
	}
	require.Equal(t, len(want), j.Len())
	for i := range want {
		assert.Equal(t, want[i].Seq, entries[i].Seq)
		assert.Equal(t, want[i].Func, entries[i].Func, i)
		assert.Equal(t, want[i].Node, entries[i].Node)
		assert.Equal(t, string(want[i].Args), string(entries[i].Args), i)
		assert.Equal(t, string(want[i].Result), string(entries[i].Result), i)
		assert.Equal(t, want[i].Err, entries[i].Err, i)
	}
}

func TestJournalCopies(t *testing.T) {
	t.Parallel()
	j := hostabi.NewJournal()
	args := json.RawMessage(`[]`)
	info := &hostabi.ErrorInfo{Code: "internal", Message: "m"}
	assert.Equal(t, 1, j.Record(hostabi.Entry{Seq: 99, Node: "n", Func: "now", Args: args, Err: info}))
	args[0] = 'X'
	info.Code = "changed"
	e := j.Entries()
	assert.Equal(t, `[]`, string(e[0].Args), "Record keeps a copy")
	assert.Equal(t, "internal", e[0].Err.Code)
	assert.Equal(t, 1, e[0].Seq, "Record numbers entries itself")
	e[0].Args[0] = 'Y'
	e[0].Err.Code = "changed"
	assert.Equal(t, `[]`, string(j.Entries()[0].Args), "Entries returns copies")
	assert.Equal(t, "internal", j.Entries()[0].Err.Code)

	var nilJ *hostabi.Journal
	assert.Zero(t, nilJ.Record(hostabi.Entry{}))
	assert.Zero(t, nilJ.Len())
	assert.Nil(t, nilJ.Entries())
}

func TestJournalConcurrent(t *testing.T) {
	t.Parallel()
	j := hostabi.NewJournal()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				j.Record(hostabi.Entry{Node: "n", Func: "random", Args: json.RawMessage(`[]`), Result: json.RawMessage(`0.5`)})
				_ = j.Entries()
			}
		})
	}
	wg.Wait()
	require.Equal(t, 800, j.Len())
	for i, e := range j.Entries() {
		require.Equal(t, i+1, e.Seq)
	}
}

func TestJournalJSON(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	j := hostabi.NewJournal()
	d := newDispatcher(r.fullHost(), []string{agent.CapClock, agent.CapRandom, agent.CapAskUser}, j, sandbox.Limits{})
	_, _ = call(t, d, hostabi.FuncNow, `[]`)
	_, _ = call(t, d, hostabi.FuncRandom, `[]`)
	r.askErr = fault.New(fault.Timeout, "ask user", "no answer")
	_, _ = call(t, d, hostabi.FuncAskUser, goodArgs()[hostabi.FuncAskUser])
	require.Equal(t, 3, j.Len())

	data, err := json.Marshal(j)
	require.NoError(t, err)
	assert.JSONEq(t, `{"version":1,"entries":[
		{"seq":1,"node":"n1","func":"now","args":[],"result":{"unix_ms":1700000000123,"iso":"2023-11-14T22:13:20.123Z"}},
		{"seq":2,"node":"n1","func":"random","args":[],"result":0.25},
		{"seq":3,"node":"n1","func":"askUser","args":[{"parts":[{"type":"text","text":"continue?"}]}],
		 "error":{"code":"timeout","message":"host askUser: node \"n1\": ask user: no answer"}}]}`, string(data))

	var back hostabi.Journal
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, j.Entries(), back.Entries())
	again, err := json.Marshal(&back)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again))
	decoded, err := hostabi.DecodeJournal(data)
	require.NoError(t, err)
	assert.Equal(t, j.Entries(), decoded.Entries())

	empty, err := json.Marshal(hostabi.NewJournal())
	require.NoError(t, err)
	assert.JSONEq(t, `{"version":1,"entries":[]}`, string(empty))

	assert.ErrorIs(t, back.Entries()[2].Err.Err(), fault.Timeout)
}

func TestJournalDecodeRejects(t *testing.T) {
	t.Parallel()
	ok := `{"seq":1,"node":"n","func":"now","args":[],"result":1}`
	tests := map[string]string{
		"not JSON":        `nope`,
		"empty":           ``,
		"array":           `[]`,
		"no version":      `{"entries":[]}`,
		"other version":   `{"version":2,"entries":[]}`,
		"unknown field":   `{"version":1,"entries":[],"extra":1}`,
		"entry field":     `{"version":1,"entries":[{"seq":1,"node":"n","func":"now","args":[],"result":1,"x":1}]}`,
		"trailing":        `{"version":1,"entries":[]} {}`,
		"seq from 0":      `{"version":1,"entries":[{"seq":0,"node":"n","func":"now","args":[],"result":1}]}`,
		"seq gap":         `{"version":1,"entries":[` + ok + `,{"seq":3,"node":"n","func":"now","args":[],"result":1}]}`,
		"no node":         `{"version":1,"entries":[{"seq":1,"func":"now","args":[],"result":1}]}`,
		"no func":         `{"version":1,"entries":[{"seq":1,"node":"n","args":[],"result":1}]}`,
		"args object":     `{"version":1,"entries":[{"seq":1,"node":"n","func":"now","args":{},"result":1}]}`,
		"no args":         `{"version":1,"entries":[{"seq":1,"node":"n","func":"now","result":1}]}`,
		"neither":         `{"version":1,"entries":[{"seq":1,"node":"n","func":"now","args":[]}]}`,
		"both":            `{"version":1,"entries":[{"seq":1,"node":"n","func":"now","args":[],"result":1,"error":{"code":"internal","message":""}}]}`,
		"error no code":   `{"version":1,"entries":[{"seq":1,"node":"n","func":"now","args":[],"error":{"message":"m"}}]}`,
		"error extra key": `{"version":1,"entries":[{"seq":1,"node":"n","func":"now","args":[],"error":{"code":"internal","kind":"x"}}]}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j := hostabi.NewJournal()
			j.Record(hostabi.Entry{Node: "keep", Func: "now", Args: json.RawMessage(`[]`), Result: json.RawMessage(`1`)})
			err := j.UnmarshalJSON([]byte(in))
			requireKind(t, err, fault.Validation)
			assert.Contains(t, err.Error(), "decode journal")
			assert.Equal(t, "keep", j.Entries()[0].Node, "a failed decode leaves the journal unchanged")
			_, err = hostabi.DecodeJournal([]byte(in))
			requireKind(t, err, fault.Validation)
		})
	}
	j, err := hostabi.DecodeJournal([]byte(`{"version":1,"entries":[` + ok + `]}`))
	require.NoError(t, err)
	assert.Equal(t, 1, j.Len())
}

// A journal is bounded: once it holds MaxJournalBytes, non-deterministic
// calls are refused with a max_journal_bytes limit (and recorded no
// more), while deterministic ones go on; a script looping on host.now
// cannot grow a run's journal without bound.
func TestJournalIsBounded(t *testing.T) {
	t.Parallel()
	big, err := json.Marshal(strings.Repeat("x", 1<<20))
	require.NoError(t, err)
	j := hostabi.NewJournal()
	for !j.Full() {
		j.Record(hostabi.Entry{Node: "n", Func: hostabi.FuncRandom, Args: []byte(`[]`), Result: big})
	}
	n := j.Len()
	assert.Equal(t, hostabi.MaxJournalBytes>>20, n, "about one entry per MiB")
	r := newRecorder()
	d := newDispatcher(r.fullHost(), allCaps(), j, sandbox.Limits{})
	_, err = call(t, d, hostabi.FuncNow, `[]`)
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, sandbox.LimitJournalBytes, le.Limit)
	requireKind(t, err, fault.BudgetExceeded)
	assert.Equal(t, n, j.Len(), "the refused call is not journaled")
	_, err = call(t, d, hostabi.FuncEmit, `["token","x"]`)
	require.NoError(t, err, "a deterministic call goes on")

	// A journal read back counts what it holds.
	data, err := json.Marshal(j)
	require.NoError(t, err)
	back, err := hostabi.DecodeJournal(data)
	require.NoError(t, err)
	assert.True(t, back.Full())
}
