package checkpoint

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The compaction child saves waves on a board large enough to compact
// and kills itself (SIGKILL) at the step of its first compaction named
// by compactStepEnv.
const (
	compactDirEnv  = "CORRAL_CHECKPOINT_COMPACT_DIR"
	compactStepEnv = "CORRAL_CHECKPOINT_COMPACT_STEP"
)

// The steps of a compaction, in order.
var compactSteps = []string{"create-tmp", "half-write", "write", "sync", "close", "rename", "after-rename", "sync-dir"}

// killingDir kills the process at one step of a compaction.
type killingDir struct {
	logDir
	step    string
	renamed bool // the compaction's rename is done: its SyncDir follows
}

func die() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }

func (d *killingDir) at(step string) {
	if d.step == step {
		die()
	}
}

func (d *killingDir) OpenFile(name string, flag int, perm fs.FileMode) (logFile, error) {
	if !strings.HasPrefix(name, tmpDir+"/") {
		return d.logDir.OpenFile(name, flag, perm)
	}
	d.at("create-tmp")
	f, err := d.logDir.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &killingFile{logFile: f, d: d}, nil
}

func (d *killingDir) Rename(from, to string) error {
	d.at("rename")
	err := d.logDir.Rename(from, to)
	d.renamed = true
	d.at("after-rename")
	return err
}

func (d *killingDir) SyncDir(name string) error {
	if d.renamed {
		d.at("sync-dir")
	}
	return d.logDir.SyncDir(name)
}

type killingFile struct {
	logFile
	d *killingDir
}

func (f *killingFile) Write(p []byte) (int, error) {
	if f.d.step == "half-write" {
		_, _ = f.logFile.Write(p[:len(p)/2])
		die()
	}
	n, err := f.logFile.Write(p)
	f.d.at("write")
	return n, err
}

func (f *killingFile) Sync() error {
	err := f.logFile.Sync()
	f.d.at("sync")
	return err
}

func (f *killingFile) Close() error {
	err := f.logFile.Close()
	f.d.at("close")
	return err
}

// compactBoard is the board of wave n: a 100 KB var rewritten every wave.
func compactBoard(n int) *agent.Board {
	b := agent.NewBoard()
	b.Vars["big"] = strings.Repeat(strconv.Itoa(n%10), 100<<10)
	b.Vars["n"] = float64(n)
	return b
}

// TestCompactionCrashChild is the child of TestCompactionKilledAtEachStep.
func TestCompactionCrashChild(t *testing.T) {
	dir, step := os.Getenv(compactDirEnv), os.Getenv(compactStepEnv)
	if dir == "" {
		t.Skip("run by TestCompactionKilledAtEachStep")
	}
	ctx := context.Background()
	ws, err := workspace.Open(dir)
	require.NoError(t, err)
	s, err := NewStore(ws, "")
	require.NoError(t, err)
	s.logs.wrap = func(inner logDir) logDir { return &killingDir{logDir: inner, step: step} }
	out := bufio.NewWriter(os.Stdout)
	for n := 1; n < 1000; n++ {
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: n, Board: compactBoard(n)}))
		fmt.Fprintf(out, "committed %d\n", n)
		require.NoError(t, out.Flush())
	}
	t.Fatal("no compaction")
}

// Killed at each step of a compaction (before the temporary file, in the
// middle of writing it, after writing, flushing and closing it, before and
// after the rename, before the directory's flush), a process leaves a log
// that loads as the last wave a save returned, or the wave in flight when
// the kill came after the rename; the next process saves and loads on.
// REF 7.9.5
// REF 7.9.6
func TestCompactionKilledAtEachStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process per step")
	}
	t.Parallel()
	ctx := context.Background()
	for _, step := range compactSteps {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^TestCompactionCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), compactDirEnv+"="+dir, compactStepEnv+"="+step)
		out, err := cmd.Output()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s: the child was killed: %s", step, out)
		require.Equal(t, -1, exit.ExitCode(), "%s: killed by a signal: %s", step, out)
		committed := 0
		for _, line := range strings.Split(string(out), "\n") {
			if n, ok := strings.CutPrefix(line, "committed "); ok {
				committed, _ = strconv.Atoi(n)
			}
		}
		require.Positive(t, committed, step)
		ws, err := workspace.Open(dir)
		require.NoError(t, err)
		s, err := NewStore(ws, "")
		require.NoError(t, err)
		cp, err := s.Load(ctx, "run-1")
		require.NoError(t, err, step)
		require.NotNil(t, cp, step)
		want := committed
		if step == "after-rename" || step == "sync-dir" {
			want = committed + 1
		}
		assert.Equal(t, want, cp.Iteration, step)
		assert.Equal(t, compactBoard(cp.Iteration).Vars, cp.Board.Vars, step)
		next := cp.Iteration + 1
		require.NoError(t, s.Save(ctx, agent.Checkpoint{ExecID: "run-1", Iteration: next, Board: compactBoard(next)}), step)
		cp, err = s.Load(ctx, "run-1")
		require.NoError(t, err, step)
		assert.Equal(t, next, cp.Iteration, step)
		ids, err := s.List(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"run-1"}, ids, "%s: a temporary file is no record", step)
		tmps, _ := filepath.Glob(filepath.Join(dir, DefaultPrefix, tmpDir, "*"))
		assert.LessOrEqual(t, len(tmps), 1, "%s: %v", step, tmps)
		require.NoError(t, s.Close())
		require.NoError(t, ws.Close())
	}
}
