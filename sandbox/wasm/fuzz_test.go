package wasm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
	"github.com/tetratelabs/wazero/api"
)

// fuzzTarget is one instance whose memory the fuzz input fills, and a
// call state the decoders run in.
type fuzzTarget struct {
	rt   *Runtime
	inst *instance
}

func newFuzzTarget(f *testing.F) *fuzzTarget {
	f.Helper()
	rt, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = rt.Close() })
	bin, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wasm", "wat", "ok.wasm"))
	if err != nil {
		f.Fatal(err)
	}
	ctx := context.Background()
	m, err := rt.compile(ctx, "fuzz", bin)
	if err != nil {
		f.Fatal(err)
	}
	st := &callState{rt: rt, ctx: ctx, limits: rt.limits}
	inst, err := rt.instantiate(ctx, m, st)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(inst.close)
	return &fuzzTarget{rt: rt, inst: inst}
}

// state is a fresh call with a board, a host and every grant.
func (ft *fuzzTarget) state() *callState {
	b := agent.NewBoard()
	b.Vars["obj"] = map[string]any{"n": 1.0}
	b.Append(agent.MainChannel, message.NewTextMessage(message.RoleUser, "hi"))
	grants := []string{agent.CapSteer, agent.CapPublish, agent.CapEmit, agent.CapInterrupt, agent.CapUsage,
		agent.CapClock, agent.CapRandom, agent.CapLog}
	run := agent.Run{ID: "run-1", AgentID: "agent", Capabilities: grants}
	limits := sandbox.Limits{MaxValueBytes: 4096}.WithDefaults()
	d := hostabi.NewDispatcher(hostabi.Config{Host: agent.NoopHost{}, Run: run, Node: "fuzz", Limits: limits})
	st := &callState{rt: ft.rt, ctx: context.Background(), op: "fuzz", limits: limits,
		inv: sandbox.Invocation{Node: "fuzz", Board: *b, ABI: d, Parallel: func(string, string) bool { return true }}}
	st.board.Reset(st.inv.Board, 0)
	return st
}

// call writes data at off into the guest's memory and calls fn with the
// pointer and length ptr, n, as a guest would. A stop (a limit or a
// signal) unwinds with stopPanic, which is what the guest sees; any other
// panic fails the fuzz run.
func (ft *fuzzTarget) call(t *testing.T, st *callState, fn guestFunc, data []byte, off, ptr, n uint32) {
	mem := ft.inst.mod.Memory()
	if size := mem.Size(); size > 0 {
		off %= size
		if int(off)+len(data) > int(size) {
			data = data[:size-off]
		}
		mem.Write(off, data)
	}
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(stopPanic); !ok {
				t.Fatalf("host panic: %v", p)
			}
		}
	}()
	r := st.dispatch(st.ctx, ft.inst.mod, ptr, n, fn)
	if got := uint32(r); int(got) != len(st.pending) {
		t.Fatalf("length %d for a pending result of %d bytes", got, len(st.pending))
	}
	if len(st.pending) > 0 {
		var v any
		if r&resultErrFlag != 0 && json.Unmarshal(st.pending, &v) != nil {
			t.Fatalf("error payload is not JSON: %q", st.pending)
		}
		_ = st.fetch(ft.inst.mod, api.DecodeU32(uint64(ptr)), uint32(len(st.pending)))
	}
}

func seeds(f *testing.F, names int) {
	for i := range names {
		f.Add(uint8(i), []byte(`["a", 1]`), uint32(0), uint32(0), uint32(8))
		f.Add(uint8(i), []byte(`[{"parts":[{"type":"text","text":"x"}]}]`), uint32(100), uint32(100), uint32(37))
	}
	f.Add(uint8(0), []byte(`[`), uint32(65530), uint32(65530), uint32(64))
	f.Add(uint8(1), []byte{}, uint32(0), uint32(0xfffffff0), uint32(16))
	f.Add(uint8(2), []byte(`"x"`), uint32(0), uint32(0), uint32(0xffffffff))
}

// Every function of module host decodes arbitrary bytes at arbitrary
// pointers and lengths into a clean result or error, never a host panic.
func FuzzHostFunctions(f *testing.F) {
	ft := newFuzzTarget(f)
	names := hostabi.Names()
	seeds(f, len(names))
	f.Fuzz(func(t *testing.T, which uint8, data []byte, off, ptr, n uint32) {
		name := names[int(which)%len(names)]
		if name == hostabi.FuncAskUser {
			return // NoopHost answers without a user; nothing blocks
		}
		ft.call(t, ft.state(), abiCall(name), data, off, ptr, n)
	})
}

// Every function of module corral (board, signals, parallel, fail)
// decodes arbitrary bytes the same way.
func FuzzNodeFunctions(f *testing.F) {
	ft := newFuzzTarget(f)
	api := nodeAPI()
	var names []string
	for _, n := range NodeFunctions() {
		if _, ok := api[n]; ok {
			names = append(names, n)
		}
	}
	seeds(f, len(names))
	f.Fuzz(func(t *testing.T, which uint8, data []byte, off, ptr, n uint32) {
		name := names[int(which)%len(names)]
		ft.call(t, ft.state(), api[name], data, off, ptr, n)
	})
}

// corral.result copies a pending result only to a range inside the
// guest's memory and of the result's length.
func FuzzResult(f *testing.F) {
	ft := newFuzzTarget(f)
	f.Add([]byte(`{"unix_ms":1}`), uint32(0), uint32(13))
	f.Add([]byte(`null`), uint32(0xfffffff0), uint32(4))
	f.Add([]byte{}, uint32(65535), uint32(0))
	f.Fuzz(func(t *testing.T, pending []byte, ptr, n uint32) {
		st := ft.state()
		st.pending = pending
		got := st.fetch(ft.inst.mod, ptr, n)
		inside := uint64(ptr)+uint64(n) <= uint64(ft.inst.mod.Memory().Size())
		if want := pending != nil && int(n) == len(pending) && inside; (got == 0) != want {
			t.Fatalf("fetch(%d, %d) of %d bytes = %d", ptr, n, len(pending), got)
		}
	})
}
