package replay

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"regexp"
	"runtime/debug"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/session"
)

// Recorder records every turn of the runtime whose host factory it
// decorates (Decorate, a runtime.HostDecorator): each turn's outside
// inputs, events and board writes, kept by run id. Finish adds a turn's
// outcome; Recording returns a turn's recording. It is safe for
// concurrent use.
type Recorder struct {
	cfg RecorderConfig

	mu    sync.Mutex
	turns map[string]*recorded
	order []string
}

// RecorderConfig configures a Recorder.
type RecorderConfig struct {
	// Document is the deployment document's path, written to each
	// recording's header; "" leaves it out.
	Document string
	// Digests are the documents' digests (Digests), written to each
	// recording's header.
	Digests []Digest
	// MaxTurns bounds the turns kept: past it, the oldest turn of the
	// tenant that keeps the most turns is forgotten (with one tenant, the
	// oldest turn). <= 0 means 64.
	MaxTurns int
	// MaxTenantBytes bounds the bytes the recordings of one tenant's
	// turns hold (Recorder.TenantBytes): past it, that tenant's oldest
	// recordings are forgotten, never another tenant's. <= 0 means
	// DefaultMaxTenantBytes.
	MaxTenantBytes int64
	// MaxBytes bounds the bytes of all the recordings kept: past it, the
	// oldest recording of the tenant that holds the most bytes is
	// forgotten, until the rest fit. <= 0 means DefaultMaxBytes.
	MaxBytes int64
	// MaxTurnBytes bounds the events and board writes kept for one turn
	// (the inputs are bounded by the run's journal, hostabi.MaxJournalBytes):
	// past it the turn's recording keeps no more of them and is marked
	// truncated (Header.Truncated), which a replay refuses. <= 0 means
	// DefaultMaxTurnBytes.
	MaxTurnBytes int64
}

// DefaultMaxTenantBytes and DefaultMaxBytes are the bytes of recordings a
// Recorder keeps for one tenant and for all, unless RecorderConfig says
// otherwise.
const (
	DefaultMaxTenantBytes = 64 << 20
	DefaultMaxBytes       = 256 << 20
)

// DefaultMaxTurnBytes is the bytes of events and board writes a Recorder
// keeps for one turn unless RecorderConfig.MaxTurnBytes says otherwise.
const DefaultMaxTurnBytes = 16 << 20

type recorded struct {
	tap    *tap
	key    session.Key
	tenant string
	result *Outcome
	req    *agent.Request
	start  *Start
}

// startOf is the state the turn of req starts from; nil for an empty
// session.
func startOf(req session.HostRequest) *Start {
	if req.ResumeFrom == nil && (req.History == nil || boardEmpty(req.History)) {
		return nil
	}
	st := &Start{}
	if req.ResumeFrom != nil {
		cp := req.ResumeFrom.Clone()
		st.Resume = &cp
	} else {
		st.History = req.History.Clone()
	}
	return st
}

func boardEmpty(b *agent.Board) bool {
	if len(b.Vars) > 0 {
		return false
	}
	for _, msgs := range b.Channels {
		if len(msgs) > 0 {
			return false
		}
	}
	return true
}

// NewRecorder returns a recorder.
func NewRecorder(cfg RecorderConfig) *Recorder {
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 64
	}
	if cfg.MaxTurnBytes <= 0 {
		cfg.MaxTurnBytes = DefaultMaxTurnBytes
	}
	if cfg.MaxTenantBytes <= 0 {
		cfg.MaxTenantBytes = DefaultMaxTenantBytes
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	return &Recorder{cfg: cfg, turns: map[string]*recorded{}}
}

// Decorate wraps a host factory so that every turn it builds is recorded.
// Its signature is runtime.HostDecorator's.
func (r *Recorder) Decorate(next session.HostFactory) (session.HostFactory, error) {
	if next == nil {
		return nil, fault.New(fault.Validation, "recorder", "no host factory to decorate")
	}
	return func(ctx context.Context, req session.HostRequest) (agent.Host, error) {
		h, err := next(ctx, req)
		if err != nil {
			return nil, err
		}
		t := &tap{Host: h, runID: req.RunID, journal: hostabi.NewJournal(), maxBytes: r.cfg.MaxTurnBytes}
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.turns[req.RunID]; !ok {
			r.order = append(r.order, req.RunID)
		}
		r.turns[req.RunID] = &recorded{tap: t, key: req.Key, tenant: req.Tenant, start: startOf(req)}
		r.retainLocked()
		return t, nil
	}, nil
}

// Finish records the outcome of the turn runID and the request it ran:
// call it once the turn settled, with what Turn.Wait returned. A run id the
// recorder does not hold is a NotFound error.
func (r *Recorder) Finish(runID string, req agent.Request, res *agent.Result, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.turns[runID]
	if !ok {
		return fault.New(fault.NotFound, "recorder", "run %q was not recorded", runID)
	}
	req = redactRequest(req)
	req.RunID = runID
	t.req, t.result = &req, outcomeOf(res, err)
	r.retainLocked() // the turn's size is final now
	return nil
}

// Watch finishes turn's recording when it settles, with req, the request
// it was started with. The goroutine it starts ends when the turn does.
func (r *Recorder) Watch(turn *session.Turn, req agent.Request) {
	go func() {
		<-turn.Done()
		res, err := turn.Wait(context.Background())
		_ = r.Finish(turn.RunID(), req, res, err)
	}()
}

// RunIDs returns the run ids of the turns the recorder holds, oldest
// first.
func (r *Recorder) RunIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.order...)
}

// Recording returns the recording of the turn runID: the inputs, events
// and board writes so far, and the outcome once Finish was called.
func (r *Recorder) Recording(runID string) (*Recording, bool) {
	r.mu.Lock()
	t, ok := r.turns[runID]
	r.mu.Unlock()
	if !ok {
		return nil, false
	}
	events, boards := t.tap.transcript()
	rec := &Recording{
		Header: Header{Kind: KindHeader, Format: FormatVersion, Corral: Version(), Agent: t.key.AgentID,
			Context: t.key.ContextID, RunID: runID, Seeds: SeedsOf(runID), Document: r.cfg.Document,
			Digests: append([]Digest(nil), r.cfg.Digests...), Start: t.start, Truncated: t.tap.isTruncated()},
		Inputs: inputsOf(t.tap.journal.Entries()),
		Events: events,
		Boards: boards,
	}
	r.mu.Lock()
	if t.req != nil {
		rec.Header.Request = t.req.Clone()
	}
	if t.result != nil {
		out := *t.result
		rec.Result = &out
	}
	r.mu.Unlock()
	return rec, true
}

// SeedsOf returns the seeds a run's random source takes from its id, as
// the runtime's base host derives them.
func SeedsOf(runID string) Seeds {
	sum := sha256.Sum256([]byte(runID))
	return Seeds{PCG: [2]uint64{binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])}}
}

// Version is the version of Corral as the build recorded it.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Version == "" {
		return "(devel)"
	}
	return info.Main.Version
}

// outcomeOf is the recorded form of a settled turn.
func outcomeOf(res *agent.Result, err error) *Outcome {
	o := &Outcome{Kind: KindResult, Status: agent.StatusFailed}
	if res != nil {
		o.Status, o.Output = res.Status, res.Output
		if len(res.State) > 0 {
			o.State, _ = json.Marshal(res.State)
		}
		if err == nil {
			err = res.Err
		}
	}
	if err != nil {
		o.Error = &OutcomeError{Kind: fault.KindOr(err, fault.Internal).String(), Message: err.Error()}
	}
	return o
}

// secretKey matches request metadata keys that carry credentials, whose
// values a recording never holds.
var secretKey = regexp.MustCompile(`(?i)(authorization|api[-_]?key|secret|password|token|cookie)`)

// redactRequest returns req without credential values in its metadata.
func redactRequest(req agent.Request) agent.Request {
	req = req.Clone()
	for k := range req.Metadata {
		if secretKey.MatchString(k) {
			req.Metadata[k] = "[redacted]"
		}
	}
	return req
}

// RecordingBytes returns the recording of the turn runID in its file form
// (Recording.Bytes): a NotFound error when the recorder does not hold it,
// and Encode's error when it cannot be written. With Finish, it makes a
// Recorder a serve.Recordings.
func (r *Recorder) RecordingBytes(runID string) ([]byte, error) {
	rec, ok := r.Recording(runID)
	if !ok {
		return nil, fault.New(fault.NotFound, "recording", "no recording of turn %q is kept", runID)
	}
	return rec.Bytes()
}
