package checkpoint_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/require"
)

// The crash child saves the waves of three exec ids into the directory
// named by crashDirEnv; crashBigEnv set makes its boards about 400 KB.
const (
	crashDirEnv = "CORRAL_CHECKPOINT_CRASH_DIR"
	crashBigEnv = "CORRAL_CHECKPOINT_CRASH_BIG"
)

var crashIDs = []string{"run-a", "run-b", checkpoint.SessionKey("crash", "c")}

// crashBig is the 400 KB var of a big board at wave n.
func crashBig(n int) string {
	return strings.Repeat(fmt.Sprintf("%07d", n), 400<<10/7)
}

// crashWave makes wave n's changes on w (n from 1): a var set every wave,
// one deleted every tenth, a message appended every third, the channel
// rewritten every fortieth and, on a big board, the 400 KB var rewritten
// every tenth.
func crashWave(w *writer, id string, n int, big bool) {
	w.set("iter", float64(n))
	w.set(fmt.Sprintf("w%d", n%8), fmt.Sprintf("%s-%d-%s", id, n, strings.Repeat("p", n*37%500)))
	if n%10 == 0 {
		w.unset(fmt.Sprintf("w%d", (n+3)%8))
	}
	if n%3 == 0 {
		w.append("main", message.NewTextMessage(message.RoleAssistant, "m"+strconv.Itoa(n)))
	}
	if n%40 == 0 {
		msgs := w.cp.Board.Channels["main"]
		w.replace("main", append([]message.Message(nil), msgs[len(msgs)-2:]...))
	}
	if big && n%10 == 0 {
		w.set("big", crashBig(n))
	}
	w.cp.Iteration = n
	w.cp.Steps = []string{"wave-" + strconv.Itoa(n)}
}

// crashBoard is the board of id after wave n, rebuilt wave by wave.
func crashBoard(id string, n int, big bool) *agent.Board {
	w := newWriter(nil, crashStart(id, big), 1)
	for i := 1; i <= n; i++ {
		crashWave(w, id, i, big)
	}
	return w.cp.Board
}

func crashStart(id string, big bool) agent.Checkpoint {
	b := agent.NewBoard()
	if big {
		b.Vars["big"] = crashBig(0)
	}
	return agent.Checkpoint{ExecID: id, Steps: []string{"start"}, Board: b}
}

// writer keeps a checkpoint's BoardChanges as an engine does.
type writer struct {
	s         agent.CheckpointStore
	cp        agent.Checkpoint
	id        uint64
	seq, base uint64
	vars      map[string]struct{}
	chans     map[string]int
}

func newWriter(s agent.CheckpointStore, cp agent.Checkpoint, id uint64) *writer {
	return &writer{s: s, cp: cp, id: id}
}

func (w *writer) set(k string, v any) { w.cp.Board.Vars[k] = v; w.touch(k) }
func (w *writer) unset(k string)      { delete(w.cp.Board.Vars, k); w.touch(k) }
func (w *writer) touch(k string) {
	if w.vars == nil {
		w.vars = map[string]struct{}{}
	}
	w.vars[k] = struct{}{}
}

func (w *writer) append(name string, m message.Message) {
	if w.chans == nil {
		w.chans = map[string]int{}
	}
	if _, ok := w.chans[name]; !ok {
		w.chans[name] = len(w.cp.Board.Channels[name])
	}
	w.cp.Board.Append(name, m)
}

func (w *writer) replace(name string, msgs []message.Message) {
	if w.chans == nil {
		w.chans = map[string]int{}
	}
	w.chans[name] = 0
	w.cp.Board.Channels[name] = msgs
}

func (w *writer) save(ctx context.Context) error {
	w.seq++
	cp := w.cp
	cp.Changes = &agent.BoardChanges{Writer: w.id, Seq: w.seq, Base: w.base, Vars: w.vars, Channels: w.chans}
	if err := w.s.Save(ctx, cp); err != nil {
		return err
	}
	w.base, w.vars, w.chans = w.seq, nil, nil
	return nil
}

// TestCrashChild is the child process of TestCrashKeepsCommittedWaves: it
// resumes each exec id from its store and saves waves round the ids,
// printing "committed <id> <wave>" after each save returns, until killed.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestCrashKeepsCommittedWaves")
	}
	big := os.Getenv(crashBigEnv) != ""
	ctx := context.Background()
	ws, err := workspace.Open(dir)
	require.NoError(t, err)
	s, err := checkpoint.NewStore(ws, "")
	require.NoError(t, err)
	writers := make([]*writer, len(crashIDs))
	for i, id := range crashIDs {
		cp, err := s.Load(ctx, id)
		require.NoError(t, err)
		if cp == nil {
			start := crashStart(id, big)
			cp = &start
		}
		writers[i] = newWriter(s, *cp, mrand.Uint64()|1)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		w := writers[i%len(writers)]
		crashWave(w, w.cp.ExecID, w.cp.Iteration+1, big)
		require.NoError(t, w.save(ctx))
		fmt.Fprintf(out, "committed %s %d\n", w.cp.ExecID, w.cp.Iteration)
		require.NoError(t, out.Flush())
	}
}

// Killed with SIGKILL at random moments while it saves waves (50 times,
// on small and on 400 KB boards), a process leaves logs that every later
// process opens: each exec id loads, with every wave a save returned and
// at most the one in flight besides, and the board is exactly the one of
// that wave; an exec id never saved starts clean.
// REF 7.9.6
func TestCrashKeepsCommittedWaves(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 50 processes")
	}
	t.Parallel()
	const kills = 50
	dirs := map[bool]string{false: t.TempDir(), true: t.TempDir()}
	last := map[string]int{}
	for round := range kills {
		big := round%2 == 1
		reported := crashRound(t, dirs[big], big)
		ws, err := workspace.Open(dirs[big])
		require.NoError(t, err)
		s, err := checkpoint.NewStore(ws, "")
		require.NoError(t, err)
		for _, id := range crashIDs {
			key := fmt.Sprint(big, id)
			cp, err := s.Load(context.Background(), id)
			require.NoError(t, err, "round %d: %s opens", round, id)
			if cp == nil {
				require.Zero(t, reported[id], "round %d: %s: a committed wave is lost", round, id)
				require.Zero(t, last[key], "round %d: %s: committed waves are lost", round, id)
				continue
			}
			n := cp.Iteration
			require.GreaterOrEqual(t, n, max(reported[id], last[key]), "round %d: %s: a committed wave is lost", round, id)
			require.LessOrEqual(t, n, max(reported[id], last[key])+1, "round %d: %s: a wave never saved", round, id)
			want, err := json.Marshal(crashBoard(id, n, big))
			require.NoError(t, err)
			got, err := json.Marshal(cp.Board)
			require.NoError(t, err)
			require.True(t, string(want) == string(got), "round %d: %s: the board of wave %d differs", round, id, n)
			last[key] = n
		}
		require.NoError(t, s.Close())
		require.NoError(t, ws.Close())
	}
	t.Logf("waves committed: %v", last)
}

// crashRound starts the child, lets it commit a wave, kills it at a
// random moment and returns the last wave it reported per exec id.
func crashRound(t *testing.T, dir string, big bool) map[string]int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	if big {
		cmd.Env = append(cmd.Env, crashBigEnv+"=1")
	}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var mu sync.Mutex
	reported := map[string]int{}
	first := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		once := sync.OnceFunc(func() { close(first) })
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 3 && f[0] == "committed" {
				n, _ := strconv.Atoi(f[2])
				mu.Lock()
				reported[f[1]] = n
				mu.Unlock()
				once()
			}
		}
	}()
	select {
	case <-first:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the child committed nothing")
	}
	time.Sleep(time.Duration(mrand.IntN(40000)) * time.Microsecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-scanned
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the child was killed, it did not exit on its own")
	mu.Lock()
	defer mu.Unlock()
	return reported
}
