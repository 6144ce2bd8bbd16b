// Package replay records a turn to a file and replays it offline, byte for
// byte, reporting the first divergence with the node, the script line and
// the call (docs/replay.md).
//
// A Recording is a line-oriented JSON file: a header (format version,
// Corral version, digests of the documents, scripts and modules, agent,
// session, request, run id, seeds), every outside input the turn took, in
// order (host.now, host.random, askUser answers, drainSteer results,
// delegation results, model replies with their stream chunks, tool
// results), then the expected transcript (events, board writes, result).
//
// A Recorder decorates a runtime's host factory and records every turn;
// Replay re-runs a recording against a document with the recording
// answering every input, never calling a model, a tool, a clock or a
// person, and compares what the run did with what was recorded.
//
//	rec := replay.NewRecorder(replay.RecorderConfig{})
//	b := builtin.NewBuilder()
//	_ = b.WithHostFactory(rec.Decorate)
//	// ... build, run a turn, rec.Finish(runID, req, res, err) ...
//	r, _ := rec.Recording(runID)
//	report, err := replay.Replay(ctx, r, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
package replay
