package agent

import (
	"context"
	"math"
	"sync"
)

// ExecuteOption configures one Execute call. Options are plain values and
// may be reused across calls; a nil option is ignored.
type ExecuteOption func(*executeConfig)

type executeConfig struct {
	engine      Engine
	resumeFrom  *Checkpoint
	resume      *ResumeContext
	referees    []Referee
	commitView  CommitViewProvider
	onRunEnd    func(*Result)
	parentRunID string
	newRunID    func() string
	history     *Board
}

func newExecuteConfig(opts []ExecuteOption) executeConfig {
	var cfg executeConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	return cfg
}

// WithEngine runs e instead of the agent's engine. A nil e keeps the
// agent's.
func WithEngine(e Engine) ExecuteOption {
	return func(c *executeConfig) { c.engine = e }
}

// WithResumeFrom resumes the run saved in cp: the first attempt starts from
// a copy of cp's board, and the engine gets a copy of cp in Run.ResumeFrom.
// The run id is cp.ExecID unless the request names one, which must then be
// the same. A nil cp is a fresh start; the last call wins.
func WithResumeFrom(cp *Checkpoint) ExecuteOption {
	return func(c *executeConfig) {
		if cp == nil {
			c.resumeFrom = nil
			return
		}
		cl := cp.Clone()
		c.resumeFrom = &cl
	}
}

// WithResumeContext tells the engine and the hooks why the run resumes:
// Execute puts rc on their ctx (ResumeFromContext reads it), and a non-zero
// rc.StartedAt becomes Run.StartedAt.
func WithResumeContext(rc ResumeContext) ExecuteOption {
	return func(c *executeConfig) { c.resume = &rc }
}

// WithHistory seeds every fresh attempt with a copy of b (the session's
// committed history) before the preparers run, so the request's message and
// inputs land on top of it. A resumed attempt starts from its checkpoint
// instead. A nil b starts from an empty board.
func WithHistory(b *Board) ExecuteOption {
	return func(c *executeConfig) { c.history = b.Clone() }
}

// WithReferee adds a referee that judges after the agent's own ones, in the
// order the options are given. A nil r is ignored.
func WithReferee(r Referee) ExecuteOption {
	return func(c *executeConfig) { c.referees = append(c.referees, r) }
}

// WithCommitView sets the provider that may rewrite a committed result
// before the committers see it. An error leaves the result uncommitted.
func WithCommitView(p CommitViewProvider) ExecuteOption {
	return func(c *executeConfig) { c.commitView = p }
}

// WithOnRunEnd sets a function Execute calls with the final result, after
// the committers and before it returns. It is not called when Execute
// returns an error.
func WithOnRunEnd(fn func(*Result)) ExecuteOption {
	return func(c *executeConfig) { c.onRunEnd = fn }
}

// WithParentRunID sets Run.ParentRunID: the run that started this one.
func WithParentRunID(id string) ExecuteOption {
	return func(c *executeConfig) { c.parentRunID = id }
}

// WithRunIDGenerator mints the run id when neither the request nor a
// resume checkpoint names one. An empty id from fn fails Execute
// (Internal).
func WithRunIDGenerator(fn func() string) ExecuteOption {
	return func(c *executeConfig) { c.newRunID = fn }
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
