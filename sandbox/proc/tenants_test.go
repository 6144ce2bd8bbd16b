package proc_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/proc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// innocent are the scripts of the well-behaved tenants, and the value
// each leaves in board var "out".
var innocent = []struct{ src string }{
	{`function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2) } board.setVar("out", fib(18))`},
	{`const o = {items: []}; for (let i = 0; i < 500; i++) o.items.push({i, name: "n" + i, tags: ["a", "b"]});
	  const back = JSON.parse(JSON.stringify(o)); board.setVar("out", back.items.length + back.items[499].i)`},
	{`const m = {}; for (let i = 0; i < 2000; i++) m["k" + (i % 97)] = (m["k" + (i % 97)] || 0) + i;
	  board.setVar("out", Object.keys(m).length)`},
}

var innocentWant = []float64{2584, 999, 97}

// One tenant's memory bombs do not harm the others: tenant A runs string,
// array and Map bombs round after round, under a tight kernel cap, while
// tenants B, C and D run real work beside it. Every bomb fails with a
// memory_bytes LimitError (from the worker's memory guard or from the
// kernel cap, which kills the worker), every innocent call succeeds with
// the right answer, the test process stays within a bound of its
// baseline memory, and every worker within its cap.
func TestTenantIsolation(t *testing.T) {
	rounds := 100
	capA := int64(128 << 20)
	if raceEnabled {
		capA = 512 << 20 // the race detector's shadow memory counts against it
	}
	limits := sandbox.Limits{WallTime: 2 * time.Minute}
	rt, err := proc.New(proc.Options{
		Worker: "js", Settings: []byte(`{"limits": {"wall_time": "2m"}}`), Limits: limits, MaxWorkers: 2,
		MemoryBytes: workerMemory(),
		MemoryFor: func(tenant string) int64 {
			if tenant == "A" {
				return capA
			}
			return 0
		},
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close()) }()

	runtime.GC()
	baseline := rss(t, os.Getpid())
	stop := make(chan struct{})
	var peaks peakSampler
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		peaks.run(t, rt, stop)
	}()

	bombNames := []string{"string", "array", "map"}
	var killed int
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		outs := make([]any, 4)
		for i, tenant := range []string{"A", "B", "C", "D"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				src := bombs[bombNames[round%3]]
				if i > 0 {
					src = innocent[i-1].src
				}
				b, _, err := invoke(context.Background(), rt, tenant, fmt.Sprintf("n%d", round), src)
				errs[i], outs[i] = err, b.Vars["out"]
			}()
		}
		wg.Wait()
		var le *sandbox.LimitError
		require.True(t, errors.As(errs[0], &le), "round %d: bomb: %v", round, errs[0])
		require.Equal(t, sandbox.LimitMemory, le.Limit, "round %d: %v", round, errs[0])
		if strings.Contains(errs[0].Error(), "memory cap") {
			killed++
		}
		for i := 1; i < 4; i++ {
			require.NoError(t, errs[i], "round %d: innocent tenant %d", round, i)
			require.Equal(t, innocentWant[i-1], outs[i], "round %d: innocent tenant %d", round, i)
		}
	}
	close(stop)
	<-sampled
	t.Logf("%d rounds, %d bombs stopped by the kernel cap; parent RSS baseline %d MiB, peak %d MiB; worker peak %d MiB (cap of A %d MiB)",
		rounds, killed, baseline>>20, peaks.parent>>20, peaks.worker>>20, capA>>20)
	bound := int64(256 << 20)
	if raceEnabled {
		bound = 1 << 30
	}
	assert.LessOrEqual(t, peaks.parent, baseline+bound, "the test process's RSS stays within its baseline plus %d MiB", bound>>20)
	assert.Empty(t, peaks.over, "every worker stays within its cap (plus its executable's pages)")
}

// peakSampler samples the RSS of this process and of every worker.
type peakSampler struct {
	parent, worker int64
	over           []string
}

// workerSlack is what a worker's RSS may hold beyond its data cap: its
// executable's pages and thread stacks, which RLIMIT_DATA does not count.
const workerSlack = 128 << 20

func (p *peakSampler) run(t *testing.T, rt *proc.Runtime, stop <-chan struct{}) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		p.parent = max(p.parent, rss(t, os.Getpid()))
		for _, w := range rt.Workers() {
			n := rss(t, w.Pid)
			p.worker = max(p.worker, n)
			if w.MemoryBytes > 0 && n > w.MemoryBytes+workerSlack {
				p.over = append(p.over, fmt.Sprintf("worker %d of %s: %d MiB", w.Pid, w.Tenant, n>>20))
			}
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// rss is a process's resident set size in bytes (0 when it is gone).
func rss(t *testing.T, pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Errorf("VmRSS of %d: %v", pid, err)
			}
			return kb << 10
		}
	}
	return 0
}
