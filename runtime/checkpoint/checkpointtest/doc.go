// Package checkpointtest is the conformance suite of agent.CheckpointStore.
//
// Every store, the ones in package checkpoint and any other backend, runs
// the same table of cases:
//
//	func TestMyStore(t *testing.T) {
//		checkpointtest.Run(t, func(t *testing.T) agent.CheckpointStore {
//			return mystore.New(t.TempDir())
//		})
//	}
//
// Each case states one rule of the contract in a sentence (Cases lists
// them); the sentence is logged when the case runs, so a failure says which
// rule was broken. The cases of the optional extensions, CheckpointLister
// and CheckpointDeleter, are skipped with a message when the store does not
// implement them. The cases of delta checkpoints save through a Writer,
// which sends agent.BoardChanges as an engine does; the torn-tail case
// needs RunWith and Options.Tear, and is skipped without them.
//
// # Rules for newStore
//
// Run calls newStore once per case, one case after another; each call must
// return a fresh, empty store. Anything the store needs closed is the
// caller's to close with t.Cleanup.
//
// The suite saves JSON-shaped checkpoints (numbers are float64, times are
// UTC), so that a store that serialises records returns values equal to
// the ones saved.
package checkpointtest
