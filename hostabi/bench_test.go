package hostabi_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/sandbox"
)

func BenchmarkCallNow(b *testing.B) {
	d := newDispatcher(newRecorder().fullHost(), nil, hostabi.NewJournal(), sandbox.Limits{})
	args := json.RawMessage(`[]`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Call(ctx, hostabi.FuncNow, args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallNowUnjournaled(b *testing.B) {
	d := newDispatcher(newRecorder().fullHost(), nil, nil, sandbox.Limits{})
	args := json.RawMessage(`[]`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Call(ctx, hostabi.FuncNow, args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallEmit(b *testing.B) {
	h := noopPublishHost(newRecorder())
	d := newDispatcher(h, nil, nil, sandbox.Limits{})
	args := json.RawMessage(`["token","Hello, world"]`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		// A dispatcher serves one node call, whose events are capped: start
		// a new one before the cap (amortized over a thousand calls).
		if n, _ := d.Events(); n == sandbox.DefaultMaxEvents {
			d = newDispatcher(h, nil, nil, sandbox.Limits{})
		}
		if _, err := d.Call(ctx, hostabi.FuncEmit, args); err != nil {
			b.Fatal(err)
		}
	}
}
