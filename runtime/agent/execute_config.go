package agent

import (
	"context"
	"math"
	"slices"
	"sync"
)

// ExecuteConfig configures one ExecuteWithConfig call. The zero value is
// what Execute uses: the agent's engine, a fresh start on an empty board,
// only the agent's own referees, no commit view, no callback, no parent run
// and run ids from NewRunID. A config may be reused across calls; Execute
// copies the checkpoint and the board it names before the run starts.
type ExecuteConfig struct {
	// Engine runs instead of the agent's engine. nil: the agent's.
	Engine Engine
	// ResumeFrom resumes the run saved in the checkpoint: the first
	// attempt starts from a copy of its board, and the engine gets a copy
	// of it in Run.ResumeFrom. The run id is its ExecID unless the request
	// names one, which must then be the same. nil: a fresh start.
	ResumeFrom *Checkpoint
	// ResumeContext tells the engine and the hooks why the run resumes:
	// Execute puts it on their ctx (ResumeFromContext reads it), and a
	// non-zero StartedAt becomes Run.StartedAt. nil: the ctx carries none.
	ResumeContext *ResumeContext
	// History seeds every fresh attempt with a copy of the board (the
	// session's committed history) before the preparers run, so the
	// request's message and inputs land on top of it. A resumed attempt
	// starts from its checkpoint instead. nil: an empty board.
	History *Board
	// Referees judge after the agent's own ones, in order; nil entries are
	// skipped. nil: only the agent's.
	Referees []Referee
	// CommitView may rewrite a committed result before the committers see
	// it; an error leaves the result uncommitted. nil: none.
	CommitView CommitViewProvider
	// OnRunEnd is called with the final result, after the committers and
	// before Execute returns. It is not called when Execute returns an
	// error. nil: none.
	OnRunEnd func(*Result)
	// ParentRunID becomes Run.ParentRunID: the run that started this one.
	// "": none.
	ParentRunID string
	// NewRunID mints the run id when neither the request nor a resume
	// checkpoint names one; an empty id from it fails Execute (Internal).
	// nil: NewRunID.
	NewRunID func() string
}

// owned returns cfg with its own copies of the checkpoint, the resume
// context and the board, so that the caller may change them while the run
// goes on.
func (cfg ExecuteConfig) owned() ExecuteConfig {
	if cfg.ResumeFrom != nil {
		cp := cfg.ResumeFrom.Clone()
		cfg.ResumeFrom = &cp
	}
	if cfg.ResumeContext != nil {
		rc := *cfg.ResumeContext
		cfg.ResumeContext = &rc
	}
	cfg.History = cfg.History.Clone()
	cfg.Referees = slices.Clone(cfg.Referees)
	return cfg
}

// usageMeter adds up the usage an engine reports.
type usageMeter struct {
	mu  sync.Mutex
	sum Usage
}

// wrap returns a decorator of h that counts ReportUsage calls and passes
// every call on to h.
func (m *usageMeter) wrap(h Host) Host {
	return &HostFuncs{Inner: h, ReportUsageFn: func(ctx context.Context, u Usage) error {
		m.mu.Lock()
		m.sum.InputTokens = addTokens(m.sum.InputTokens, u.InputTokens)
		m.sum.OutputTokens = addTokens(m.sum.OutputTokens, u.OutputTokens)
		m.sum.TotalTokens = addTokens(m.sum.TotalTokens, u.TotalTokens)
		m.mu.Unlock()
		return h.ReportUsage(ctx, u)
	}}
}

// addTokens adds two counts, saturating at math.MaxInt64 (and at
// math.MinInt64 for negative counts, which hosts refuse) so that a
// reported count cannot wrap the run's total around.
func addTokens(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

func (m *usageMeter) total() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sum
}
