package graph

import (
	"context"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

type startNodeKey struct{}

// WithStartNode returns ctx telling Execute to start at node id instead of
// the document's entry (a resume checkpoint still wins). An id that is not
// a node fails Execute with Validation.
func WithStartNode(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, startNodeKey{}, id)
}

// StartNodeFromContext returns the start node WithStartNode put on ctx.
func StartNodeFromContext(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(startNodeKey{}).(string)
	return id, ok
}

// frontier returns the first frontier of a run (REF 5.2.1): the
// successors of the resume checkpoint's steps, then a WithStartNode
// override, then the entry.
func (r *runState) frontier(ctx context.Context) ([]string, error) {
	if cp := r.run.ResumeFrom; cp != nil {
		return r.resume(ctx, cp)
	}
	if id, ok := StartNodeFromContext(ctx); ok {
		if _, known := r.e.nodes[id]; !known {
			return nil, fault.New(fault.Validation, opExecute, "graph %q: start node %q is not a node", r.e.doc.Name, id)
		}
		return []string{id}, nil
	}
	return r.e.entryWave, nil
}

// resume restores the checkpoint's board and iterations and returns the
// successors of its steps, with the conditions evaluated now (REF
// 5.5.3). __interrupted_node of the interrupted attempt is removed.
func (r *runState) resume(ctx context.Context, cp *agent.Checkpoint) ([]string, error) {
	if err := cp.Validate(); err != nil {
		return nil, fault.Wrap(fault.Validation, err, opExecute, "graph %q: resume", r.e.doc.Name)
	}
	if cp.ExecID != r.run.ID {
		return nil, fault.New(fault.Validation, opExecute,
			"graph %q: checkpoint %q does not belong to run %q (forking needs a fresh run)", r.e.doc.Name, cp.ExecID, r.run.ID)
	}
	if err := r.e.CanResume(*cp); err != nil {
		return nil, err
	}
	restored := cp.Board.Clone()
	r.board.Vars, r.board.Channels = restored.Vars, restored.Channels
	delete(r.board.Vars, VarInterruptedNode)
	r.iterations = cp.Iteration
	return r.successors(ctx, cp.Steps)
}

// CanResume reports whether cp can resume on this graph (REF
// 5.5.3): a spec version, when set, must be the graph's (NotAvailable
// otherwise); the steps must be non-empty (Validation) and name nodes of
// the graph (NotAvailable: the graph changed); the board must be present
// (Validation); and the iteration must not exceed max_iterations
// (BudgetExceeded).
func (e *Engine) CanResume(cp agent.Checkpoint) error {
	const op = "resume graph"
	if cp.SpecVersion != "" && cp.SpecVersion != e.doc.SpecVersion() {
		return fault.New(fault.NotAvailable, op, "graph %q: checkpoint %q is of spec version %q, the graph is %q",
			e.doc.Name, cp.ExecID, cp.SpecVersion, e.doc.SpecVersion())
	}
	if len(cp.Steps) == 0 {
		return fault.New(fault.Validation, op, "graph %q: checkpoint %q has no steps", e.doc.Name, cp.ExecID)
	}
	for _, s := range cp.Steps {
		if _, ok := e.nodes[s]; !ok {
			return fault.New(fault.NotAvailable, op, "graph %q: checkpoint %q: step %q is not a node of the graph", e.doc.Name, cp.ExecID, s)
		}
	}
	if cp.Board == nil {
		return fault.New(fault.Validation, op, "graph %q: checkpoint %q has no board", e.doc.Name, cp.ExecID)
	}
	if cp.Iteration > e.opts.MaxIterations {
		return fault.New(fault.BudgetExceeded, op, "graph %q: checkpoint %q is at iteration %d, past max_iterations %d",
			e.doc.Name, cp.ExecID, cp.Iteration, e.opts.MaxIterations)
	}
	return nil
}

// SuggestCheckpoint does nothing: a checkpoint is already written at every
// wave boundary (REF 5.5.4).
func (e *Engine) SuggestCheckpoint() {}
