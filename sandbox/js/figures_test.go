package js_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
)

// TestMemoryFigures prints, for every attack that ends on a memory or
// size limit, the peak RSS the process reached under two budgets: the
// figures of docs/sandbox.md. It runs only when JS_SANDBOX_FIGURES is set.
func TestMemoryFigures(t *testing.T) {
	if os.Getenv("JS_SANDBOX_FIGURES") == "" {
		t.Skip("set JS_SANDBOX_FIGURES=1 to measure")
	}
	fifo := filepath.Join(t.TempDir(), "map.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := js.New(js.Options{PoolSize: 1, Limits: sandbox.Limits{WallTime: time.Minute, MemoryBytes: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "| attack | peak RSS, 16 MiB budget | peak RSS, 64 MiB budget | stopped by |\n|---|---|---|---|\n")
	for _, a := range attacks(fifo) {
		if a.limit != sandbox.LimitMemory && a.limit != sandbox.LimitStack {
			continue
		}
		row := "| " + a.name
		var stopped string
		for _, budget := range []int64{16 << 20, 64 << 20} {
			resetPeak()
			before, _ := rss()
			err := sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker", Script: sandbox.Script{Source: a.src}, Limits: sandbox.Limits{WallTime: 30 * time.Second, MemoryBytes: budget}}, agent.NewBoard())
			_, peak := rss()
			row += fmt.Sprintf(" | +%d MiB", (peak-before)>>20)
			stopped = fmt.Sprint(err)
			if i := strings.Index(stopped, ": "); i > 0 {
				stopped = stopped[i+2:]
			}
		}
		fmt.Fprintf(&b, "%s | %s |\n", row, stopped)
	}
	t.Log("\n" + b.String())
}
