// Package agenttest provides a scripted agent.Engine and a recording
// agent.Host for tests of the layers above engines (agent.Execute, session
// turns, sinks, prompts, resume) that must not depend on a real engine.
//
// # Scripts
//
// An Engine runs a list of steps on every Execute call (New), or the list a
// Script function returns for each call (NewScript). Steps stream
// (Emit, EmitDelta, Say, Speculative, AcceptBranch, CancelBranch), publish
// (Publish), change the board (Reply, SetVar), reach the host (DrainSteer,
// AskUser, Checkpoint, ReportUsage), stop (WaitInterrupt, PollInterrupt,
// Fail, Hang), park until the test lets them go (WaitGate with a Gate), or
// run any function (Func). Engine.Runs records what every call saw: the run,
// the steps, the drained steer messages, prompts and replies, interrupts,
// checkpoints, the final board and the error.
//
// # Lifecycle
//
// Execute publishes agent.run.<run>.start, runs the steps in order, and
// publishes agent.run.<run>.end exactly once when it returns, from a
// deferred function on a ctx detached from the run's cancellation and
// bounded by RunEndTimeout, as the graph engine does. The run-end payload is
// an event.RunPayload with the error text, and the envelopes carry the
// run_id, agent_id and graph_id headers. WithoutRunEnd and WithRunEndFailure
// make the engine misbehave on purpose. A checkpoint records the index of
// the step to resume at in the board variable VarStep; a run with
// Run.ResumeFrom starts there, on the checkpoint's board. An interrupt step
// that fires saves such a checkpoint for the step after it before it
// returns agent.Interrupted.
//
// Factory makes an agent.Engine resource factory that returns a given
// Engine, so that a deployment document can name it.
//
// # Concurrency
//
// Engine, Host and Gate are safe for concurrent use. Each Execute call has
// its own Env and record; Engine.Runs and the Host accessors return copies.
//
// # Errors
//
// A step's error ends the run with that error, so agent.Execute classifies
// it as usual (an Interrupted error is interrupted, a ctx cancel is
// canceled). A resume from a foreign or malformed checkpoint is a
// Validation error. A failed run-end publish is joined to the run's error as
// an *agent.RunEndPublishError. Checkpoint and run-start publish failures
// are recorded, not returned.
package agenttest
