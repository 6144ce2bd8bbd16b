package agenttest

import (
	"slices"
	"sync"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// RunRecord is what one Execute call of an Engine saw and did. Engine.Runs
// returns copies.
type RunRecord struct {
	Call        int                // the engine's Execute count, from 1
	Run         agent.Run          // the run as received (ResumeFrom copied)
	Resumed     bool               // the run resumed a checkpoint
	StartStep   int                // the step index the run started at
	Steps       []string           // the names of the steps run, in order
	Steered     []message.Message  // every message DrainSteer steps drained
	Prompts     []agent.UserPrompt // every prompt AskUser steps asked
	Replies     []agent.UserReply  // every reply AskUser steps got
	Interrupts  []agent.Interrupt  // the interrupts WaitInterrupt/PollInterrupt saw
	Checkpoints []agent.Checkpoint // every checkpoint the host accepted
	// CheckpointErrors are the host's Checkpoint errors; a failed
	// checkpoint does not fail the run.
	CheckpointErrors []error
	// PublishErrors are the errors of the run-start publish, which does
	// not fail the run.
	PublishErrors []error
	Err           error        // what Execute returned (after the run end)
	Board         *agent.Board // the final board
	Done          bool         // Execute has returned
}

func (r RunRecord) clone() RunRecord {
	out := r
	out.Run = cloneRun(r.Run)
	out.Steps = slices.Clone(r.Steps)
	out.Steered = message.CloneAll(r.Steered)
	out.Prompts = slices.Clone(r.Prompts)
	out.Replies = slices.Clone(r.Replies)
	out.Interrupts = slices.Clone(r.Interrupts)
	out.Checkpoints = make([]agent.Checkpoint, len(r.Checkpoints))
	for i, cp := range r.Checkpoints {
		out.Checkpoints[i] = cp.Clone()
	}
	out.CheckpointErrors = slices.Clone(r.CheckpointErrors)
	out.PublishErrors = slices.Clone(r.PublishErrors)
	out.Board = r.Board.Clone()
	return out
}

func cloneRun(run agent.Run) agent.Run {
	if run.ResumeFrom != nil {
		cp := run.ResumeFrom.Clone()
		run.ResumeFrom = &cp
	}
	return run
}

// record is the live record of one run; mu is the recorder's lock.
type record struct {
	mu *sync.Mutex
	RunRecord
}

func (r *record) update(fn func(*RunRecord)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.RunRecord)
}

func (r *record) addStep(name string) {
	r.update(func(rr *RunRecord) { rr.Steps = append(rr.Steps, name) })
}

func (r *record) resumed(step int) {
	r.update(func(rr *RunRecord) { rr.Resumed, rr.StartStep = true, step })
}

func (r *record) finish(board *agent.Board, err error) {
	b := board.Clone()
	r.update(func(rr *RunRecord) { rr.Board, rr.Err, rr.Done = b, err, true })
}
