package proc

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waiter is a runner whose calls make one host call and return its
// result; the host call's context ends when stop gets a value, and a
// call of a node named "wait" waits for its own context instead.
type waiter struct{ stop chan struct{} }

func (w waiter) Name() string                                          { return "waiter" }
func (w waiter) Eval(context.Context, sandbox.Evaluation) (any, error) { return nil, nil }
func (w waiter) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	if inv.Node == "wait" {
		<-ctx.Done()
		return sandbox.Outcome{}, fault.FromContext(ctx.Err(), "wait")
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-hctx.Done():
		}
	}()
	res, err := inv.ABI.Call(hctx, "now", nil)
	if err != nil {
		return sandbox.Outcome{}, err
	}
	return sandbox.Outcome{Writes: sandbox.Writes{{Op: sandbox.SetVar, Name: "got", Value: string(res)}}}, nil
}

// parentEnd is a test's side of a worker served in the test process.
type parentEnd struct {
	t          *testing.T
	in, stop   *bufio.Writer
	out        *bufio.Reader
	inW, stopW *os.File
}

func (p *parentEnd) send(t frameType, msg any) {
	require.NoError(p.t, writeFrame(p.in, t, msg, DefaultMaxFrameBytes))
}

func (p *parentEnd) read(want frameType, v interface{ check() error }) {
	f, err := readFrame(p.out, DefaultMaxFrameBytes)
	require.NoError(p.t, err)
	require.NoError(p.t, decode(f, want, v))
}

// serveHere serves run in this process on pipes, as a worker does.
func serveHere(t *testing.T, rt sandbox.Runtime) *parentEnd {
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	stopR, stopW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() {
		served <- Serve(inR, stopR, outW, func(json.RawMessage) (sandbox.Runtime, error) { return rt, nil })
	}()
	p := &parentEnd{t: t, in: bufio.NewWriter(inW), stop: bufio.NewWriter(stopW), out: bufio.NewReader(outR), inW: inW, stopW: stopW}
	t.Cleanup(func() {
		_ = inW.Close()
		_ = stopW.Close()
		assert.NoError(t, <-served)
		_ = outR.Close()
		_ = outW.Close()
	})
	p.send(frameStart, &startMsg{Tenant: "t"})
	p.read(frameReady, &readyMsg{})
	return p
}

func testInvoke(id uint64, node string) *invokeMsg {
	return &invokeMsg{ID: id, Node: node, Functions: []string{"now"}, Run: sandbox.RunInfo{RunID: "r", Tenant: "t"}}
}

// REF 9.M11
// A worker runs each call on the goroutine that read it and reads the
// replies to its host calls itself: a host call whose context ends stops
// waiting at once, its late answer is dropped, and the next call's host
// call gets its own answer. A cancel that comes before its call, on the
// cancel pipe, still stops that call.
func TestWorkerWaitsAndCancels(t *testing.T) {
	rt := waiter{stop: make(chan struct{}, 1)}
	p := serveHere(t, rt)

	p.send(frameInvoke, testInvoke(1, "n"))
	var h hostMsg
	p.read(frameHost, &h)
	rt.stop <- struct{}{} // the host call's context ends before its answer
	var res resultMsg
	p.read(frameResult, &res)
	require.NotNil(t, res.Err)
	assert.ErrorIs(t, decodeError(res.Err), fault.Aborted)
	p.send(frameHostReply, &hostReplyMsg{Seq: h.Seq, Result: json.RawMessage(`"late"`)}) // dropped

	p.send(frameInvoke, testInvoke(2, "n"))
	var h2 hostMsg
	p.read(frameHost, &h2)
	assert.NotEqual(t, h.Seq, h2.Seq)
	p.send(frameHostReply, &hostReplyMsg{Seq: h2.Seq, Result: json.RawMessage(`"on time"`)})
	res = resultMsg{}
	p.read(frameResult, &res)
	require.Nil(t, res.Err)
	require.Len(t, res.Writes, 1)
	assert.Equal(t, `"on time"`, res.Writes[0].Value)

	require.NoError(t, writeFrame(p.stop, frameCancel, &cancelMsg{ID: 3}, 512)) // before its call
	p.send(frameInvoke, testInvoke(3, "wait"))
	res = resultMsg{}
	p.read(frameResult, &res)
	require.NotNil(t, res.Err)
	assert.ErrorIs(t, decodeError(res.Err), fault.Aborted)

	p.send(frameInvoke, testInvoke(4, "wait")) // a late cancel of the earlier call, then its own
	require.NoError(t, writeFrame(p.stop, frameCancel, &cancelMsg{ID: 3}, 512))
	require.NoError(t, writeFrame(p.stop, frameCancel, &cancelMsg{ID: 4}, 512))
	res = resultMsg{}
	p.read(frameResult, &res)
	assert.Equal(t, uint64(4), res.ID)
	assert.ErrorIs(t, decodeError(res.Err), fault.Aborted)
}
