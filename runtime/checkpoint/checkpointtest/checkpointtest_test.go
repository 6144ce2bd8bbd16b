package checkpointtest_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/checkpoint"
	"github.com/corral-rt/corral/runtime/checkpoint/checkpointtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flawedStore is a store in memory that breaks one rule on demand.
type flawedStore struct {
	flaw    string
	mu      sync.Mutex
	records map[string]*agent.Checkpoint
}

func (s *flawedStore) Save(_ context.Context, cp agent.Checkpoint) error {
	if s.flaw != "accepts invalid" {
		if err := checkpoint.ValidateExecID(cp.ExecID); err != nil {
			return err
		}
		if err := cp.Validate(); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[cp.ExecID]; ok && s.flaw == "first write wins" {
		return nil
	}
	if s.flaw != "shares on save" {
		cp = cp.Clone()
	}
	if old, ok := s.records[cp.ExecID]; ok && cp.Changes != nil && s.flaw == "trusts stale changes" {
		// Keeps only the changes, whatever they follow.
		for k := range cp.Changes.Vars {
			if v, ok := cp.Board.Vars[k]; ok {
				old.Board.Vars[k] = v
			} else {
				delete(old.Board.Vars, k)
			}
		}
		for name := range cp.Changes.Channels {
			old.Board.Channels[name] = cp.Board.Channels[name]
		}
		cp.Board = old.Board
	}
	cp.Changes = nil
	s.records[cp.ExecID] = &cp
	return nil
}

func (s *flawedStore) Load(_ context.Context, id string) (*agent.Checkpoint, error) {
	if err := checkpoint.ValidateExecID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cp, ok := s.records[id]
	switch {
	case !ok && s.flaw == "missing is an error":
		return nil, fault.New(fault.NotFound, "load", "%s", id)
	case !ok:
		return nil, nil
	case s.flaw == "shares on load":
		return cp, nil
	}
	c := cp.Clone()
	return &c, nil
}

func (s *flawedStore) List(context.Context) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := slices.Sorted(maps.Keys(s.records))
	if s.flaw == "unsorted list" {
		slices.Reverse(ids)
	}
	return ids, nil
}

func (s *flawedStore) Delete(_ context.Context, id string) error {
	if err := checkpoint.ValidateExecID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.records[id]; !ok && s.flaw == "delete of missing fails" {
		return errors.New("no such record")
	}
	delete(s.records, id)
	return nil
}

// onlyStore hides the optional extensions of the store it wraps.
type onlyStore struct{ agent.CheckpointStore }

const flawEnv = "CHECKPOINTTEST_FLAW"

func newFlawed(flaw string) func(*testing.T) agent.CheckpointStore {
	return func(*testing.T) agent.CheckpointStore {
		return &flawedStore{flaw: flaw, records: map[string]*agent.Checkpoint{}}
	}
}

// A store without flaws passes, and one without the extensions passes with
// their cases skipped.
// REF 7.7
// REF 7.11
func TestSoundStorePasses(t *testing.T) {
	t.Parallel()
	checkpointtest.Run(t, newFlawed(""))
	checkpointtest.Run(t, func(t *testing.T) agent.CheckpointStore {
		return onlyStore{newFlawed("")(t)}
	})
}

// TestFlawedStoreChild runs the suite against a flawed store in a child
// process started by TestSuiteCatchesFlaws.
func TestFlawedStoreChild(t *testing.T) {
	flaw := os.Getenv(flawEnv)
	if flaw == "" {
		t.Skip("runs only as the child process of TestSuiteCatchesFlaws")
	}
	checkpointtest.Run(t, newFlawed(flaw))
}

// Each flaw makes the case of the rule it breaks fail.
// REF 7.7
func TestSuiteCatchesFlaws(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	cases := map[string]string{
		"shares on save":          "save_copies",
		"shares on load":          "load_copies",
		"first write wins":        "last_write_wins",
		"missing is an error":     "missing_is_nil",
		"accepts invalid":         "invalid_checkpoint",
		"unsorted list":           "lister_sorted",
		"delete of missing fails": "deleter_idempotent",
		"trusts stale changes":    "stale_changes",
	}
	for flaw, failing := range cases {
		t.Run(flaw, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestFlawedStoreChild$", "-test.v")
			cmd.Env = append(os.Environ(), flawEnv+"="+flaw)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the suite must fail:\n%s", out)
			assert.Contains(t, string(out), "--- FAIL: TestFlawedStoreChild/"+failing+" ", "output:\n%s", out)
			assert.Contains(t, string(out), "rule: ")
		})
	}
}
