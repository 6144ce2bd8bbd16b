package proc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/proc"
)

// The test binary is its own worker: js workers for the runtimes the
// tests build through the js factory, and "crashy" workers, a js runtime
// with a way to make the Go runtime of the worker fail fatally.
func TestMain(m *testing.M) {
	js.ServeWorkerIfChild()
	proc.ServeIfChild(crashyWorker, func(raw json.RawMessage) (sandbox.Runtime, error) {
		rt, err := js.New(js.Options{PoolSize: 1})
		if err != nil {
			return nil, err
		}
		return crashy{rt}, nil
	})
	proc.ServeIfChild(noopWorker, func(json.RawMessage) (sandbox.Runtime, error) { return noop{}, nil })
	os.Exit(m.Run())
}

const crashyWorker = "crashy"

// crashy is a js runtime whose scripts that start with a marker make the
// worker's Go runtime die as a runner bug would: a fatal error, a stack
// overflow of Go code. Nothing a script can do in a real runner.
type crashy struct{ *js.Runtime }

func (c crashy) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	switch {
	case strings.HasPrefix(inv.Script.Source, "//go-stack-overflow"):
		debug.SetMaxStack(16 << 20) // overflow well under the memory cap
		return sandbox.Outcome{}, recurse(nil)
	case strings.HasPrefix(inv.Script.Source, "//go-fatal"):
		var mu sync.Mutex
		mu.Unlock() // fatal error: sync: unlock of unlocked mutex
	case strings.HasPrefix(inv.Script.Source, "//go-hang"):
		select {} // deaf to its context and its wall time
	case strings.HasPrefix(inv.Script.Source, "//go-garble"):
		// A result frame whose first field (a varint) never ends, on the
		// worker's output, as a worker taken over by its script could send.
		_, _ = os.NewFile(4, "out").Write([]byte{0, 0, 0, 4, 10, 0xff, 0xff, 0xff})
		select {}
	case strings.HasPrefix(inv.Script.Source, "//go-bloat"):
		// A result frame whose value, 24 MiB of [[],[],...], would decode
		// into some fifteen times that in the parent.
		val := append(append([]byte("["), bytes.Repeat([]byte("[],"), 8<<20)...), "[]]"...)
		_ = syscall.SetNonblock(4, false) // more than the pipe holds: wait for the parent to read it
		if _, err := os.NewFile(4, "out").Write(setVarFrame(val)); err != nil {
			fmt.Fprintln(os.Stderr, "bloat:", err)
		}
		select {}
	case strings.HasPrefix(inv.Script.Source, "//go-long-value"):
		// A var's value one byte past max_value_bytes, which the runner's
		// board API would have refused.
		limit, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(inv.Script.Source, "//go-long-value")))
		val := strconv.Quote(strings.Repeat("v", limit-1))
		_, _ = os.NewFile(4, "out").Write(setVarFrame([]byte(val)))
		select {}
	}
	return c.Runtime.Invoke(ctx, inv)
}

// setVarFrame is a result frame, header included, of one setVar of x to
// the JSON text val (the fields of the wire's result message).
func setVarFrame(val []byte) []byte {
	b := []byte{0, 0, 0, 0, 10}    // the result frame's type
	b = binary.AppendUvarint(b, 1) // the call's id
	b = binary.AppendVarint(b, 0)  // its cpu time
	b = binary.AppendUvarint(b, 1) // one write
	b = binary.AppendUvarint(b, uint64(sandbox.SetVar))
	b = binary.AppendUvarint(b, 1)
	b = append(b, 'x')
	b = binary.AppendUvarint(b, uint64(len(val)))
	b = append(b, val...)
	b = append(b, 0, 0, 0) // no messages, no value, no error
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

//go:noinline
func recurse(b []byte) error {
	var pad [1024]byte
	pad[0] = byte(len(b))
	if err := recurse(pad[:]); err != nil {
		return err
	}
	return nil
}

const noopWorker = "noop"

// noop is a runner that does nothing: what a call costs beside the
// runner's own work.
type noop struct{}

func (noop) Name() string { return noopWorker }
func (noop) Invoke(context.Context, sandbox.Invocation) (sandbox.Outcome, error) {
	return sandbox.Outcome{}, nil
}
func (noop) Eval(context.Context, sandbox.Evaluation) (any, error) { return true, nil }
