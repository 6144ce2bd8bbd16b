package session_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/require"
)

// crashDirEnv names the directory the crash helper commits boards into;
// without it TestCrashHelper does nothing.
const crashDirEnv = "CORRAL_SESSION_CRASH_DIR"

// boardSum is the checksum a committed board carries: sha256 of its
// sequence number and blob.
func boardSum(seq int, blob string) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(seq) + ":" + blob))
	return hex.EncodeToString(sum[:])
}

// checkBoard validates a committed board and returns its sequence number
// (0 for an empty history).
func checkBoard(b *agent.Board) (int, error) {
	if b == nil || b.Vars["seq"] == nil {
		return 0, nil
	}
	var seq int
	switch v := b.Vars["seq"].(type) {
	case int: // in process
		seq = v
	case float64: // read back from the store
		seq = int(v)
	default:
		return 0, fmt.Errorf("board var seq is a %T", v)
	}
	blob, ok := b.Vars["blob"].(string)
	sum, ok2 := b.Vars["sum"].(string)
	if !ok || !ok2 {
		return 0, fmt.Errorf("board vars have the wrong shapes: %T %T", b.Vars["blob"], b.Vars["sum"])
	}
	if boardSum(seq, blob) != sum {
		return 0, fmt.Errorf("board %d: checksum mismatch", seq)
	}
	return seq, nil
}

// nextBoard is the engine step of the crash helper: it checks the
// history it was given and commits the next board, with a blob of random
// size so that saves take varying time.
var nextBoard = agenttest.Func(func(_ context.Context, env *agenttest.Env) error {
	seq, err := checkBoard(env.Board())
	if err != nil {
		return fault.New(fault.Internal, "crash helper", "%v", err)
	}
	raw := make([]byte, 1+mrand.IntN(32<<10))
	_, _ = rand.Read(raw)
	blob := hex.EncodeToString(raw)
	env.Board().Vars["seq"] = seq + 1
	env.Board().Vars["blob"] = blob
	env.Board().Vars["sum"] = boardSum(seq+1, blob)
	return nil
})

// TestCrashHelper is the child process of TestDurableStateSurvivesKill:
// it commits boards in a loop and prints "committed N" after each.
func TestCrashHelper(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestDurableStateSurvivesKill")
	}
	e := newEnvWith(t, workspaceStore(t, dir), true, agenttest.New(nextBoard))
	s := e.open(key("crash")).Session()
	for {
		tr, err := s.Start(context.Background(), ask("next"))
		require.NoError(t, err)
		res := settle(t, tr)
		if !res.Committed {
			t.Fatalf("run %s did not commit: %v", tr.RunID(), res.Err)
		}
		n, err := checkBoard(res.LastBoard)
		require.NoError(t, err)
		fmt.Fprintf(os.Stdout, "committed %d\n", n)
	}
}

// A process killed at random moments while it commits session state
// leaves the previous or the new committed board, never a torn one.
// REF 2.6.2
func TestDurableStateSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 50 processes")
	}
	t.Parallel()
	const kills = 50
	dir := t.TempDir()
	last := 0 // the board on disk after the previous round
	for round := range kills {
		reported := crashRound(t, dir)
		store := workspaceStore(t, dir)
		cp, err := store.Load(context.Background(), session.SessionRecordID(key("crash")))
		require.NoError(t, err, "round %d: the record loads", round)
		require.NotNil(t, cp)
		seq, err := checkBoard(cp.Board)
		require.NoError(t, err, "round %d", round)
		require.Truef(t, seq == reported || seq == reported+1,
			"round %d: the board on disk is %d; the child last reported %d", round, seq, reported)
		require.GreaterOrEqual(t, seq, last, "round %d: committed state went back", round)
		last = seq
	}
	t.Logf("%d kills, %d boards committed", kills, last)

	// Reopening through a manager: the next turn continues the history.
	e := newEnvWith(t, workspaceStore(t, dir), true, agenttest.New(nextBoard))
	res := settle(t, e.start("crash", "after"))
	require.True(t, res.Committed, "%v", res.Err)
	n, err := checkBoard(res.LastBoard)
	require.NoError(t, err)
	require.Equal(t, last+1, n)
}

// crashRound starts the helper, lets it commit at least one board, kills
// it with SIGKILL at a random moment and returns the last sequence number
// it reported.
func crashRound(t *testing.T, dir string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var reported atomic.Int64
	reported.Store(-1)
	first := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
				v, _ := strconv.Atoi(n)
				if reported.Swap(int64(v)) < 0 {
					close(first)
				}
			}
		}
	}()
	select {
	case <-first:
	case <-time.After(patience):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the helper committed nothing")
	}
	time.Sleep(time.Duration(mrand.IntN(40000)) * time.Microsecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-scanned
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the helper was killed, it did not exit on its own")
	return int(reported.Load())
}
