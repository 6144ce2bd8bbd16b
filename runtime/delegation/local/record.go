package local

import (
	"crypto/sha256"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
)

// record is one delegation the service remembers: for Get, and for the
// idempotent replay of its key.
type record struct {
	id   string
	key  string   // idempotency key; "" when none
	fp   [32]byte // fingerprint of the request
	done chan struct{}

	mu    sync.Mutex
	resp  delegation.Response
	ended time.Time // zero while running
}

// response returns a copy of the record's latest response.
func (r *record) response() delegation.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resp.Clone()
}

// setRunning records that the target's run started.
func (r *record) setRunning(runID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.resp.Status.Terminal() {
		r.resp.Status, r.resp.RunID = delegation.StatusRunning, runID
	}
}

func (r *record) finished() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.ended.IsZero()
}

// fingerprint identifies what a request asks, without its idempotency key.
func fingerprint(req delegation.Request) [32]byte {
	req.IdempotencyKey = ""
	if req.Mode == "" {
		req.Mode = delegation.ModeSync
	}
	b, err := json.Marshal(req)
	if err != nil { // inputs that do not encode never match another request
		b = []byte(randomHex(16))
	}
	return sha256.Sum256(b)
}

// scopedKey is an idempotency key in the namespace of the agent that
// delegates (delegation.WithCaller); "" when there is no key.
func scopedKey(caller, key string) string {
	if key == "" {
		return ""
	}
	return caller + "\x00" + key
}

// admit registers req as a new delegation, or returns the record of the
// same idempotency key of the same caller (replay true). It takes a concurrency slot for a
// new delegation, and counts a new async one in s.async (REF 6.2.7).
func (s *Service) admit(caller string, req delegation.Request) (rec *record, replay bool, err error) {
	fp := fingerprint(req)
	key := scopedKey(caller, req.IdempotencyKey)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut {
		return nil, false, fault.New(fault.NotAvailable, "delegate", "the delegation service is closed")
	}
	s.pruneLocked(time.Now())
	if key != "" {
		if prev := s.keys[key]; prev != nil {
			if prev.fp != fp {
				return nil, false, fault.New(fault.Conflict, "delegate",
					"idempotency key %q was used for another request", req.IdempotencyKey)
			}
			return prev, true, nil
		}
	}
	if err := s.takeSlotsLocked(req); err != nil {
		return nil, false, err
	}
	rec = &record{id: newID(), key: key, fp: fp, done: make(chan struct{}),
		resp: delegation.Response{Status: delegation.StatusAccepted, Target: req.Target}}
	rec.resp.ID = rec.id
	s.records[rec.id] = rec
	if rec.key != "" {
		s.keys[rec.key] = rec
	}
	s.order = append(s.order, rec)
	s.pruneLocked(time.Now())
	if req.Mode == delegation.ModeAsync {
		s.async.Add(1) // under s.mu while not shut, so Close's Wait sees it
	}
	return rec, false, nil
}

// takeSlotsLocked takes a max_concurrency slot, and a defer_workers slot
// for an async request, without waiting: a full service is RateLimit.
func (s *Service) takeSlotsLocked(req delegation.Request) error {
	select {
	case s.slots <- struct{}{}:
	default:
		return fault.New(fault.RateLimit, "delegate",
			"target %q: %d delegations are already running (max_concurrency)", req.Target, s.cfg.MaxConcurrency)
	}
	if req.Mode != delegation.ModeAsync {
		return nil
	}
	select {
	case s.workers <- struct{}{}:
		return nil
	default:
		<-s.slots
		return fault.New(fault.RateLimit, "delegate",
			"target %q: %d async delegations are already running (defer_workers)", req.Target, s.cfg.DeferWorkers)
	}
}

// pruneLocked forgets finished records past the retention window, then
// the oldest finished ones beyond MaxRecords.
func (s *Service) pruneLocked(now time.Time) {
	retention := time.Duration(s.cfg.IdempotencyRetention)
	s.order = slices.DeleteFunc(s.order, func(r *record) bool {
		r.mu.Lock()
		expired := !r.ended.IsZero() && now.Sub(r.ended) > retention
		r.mu.Unlock()
		if expired {
			s.forgetLocked(r)
		}
		return expired
	})
	for over := len(s.order) - MaxRecords; over > 0; over-- {
		i := slices.IndexFunc(s.order, func(r *record) bool { return r.finished() })
		if i < 0 {
			return
		}
		s.forgetLocked(s.order[i])
		s.order = slices.Delete(s.order, i, i+1)
	}
}

func (s *Service) forgetLocked(r *record) {
	delete(s.records, r.id)
	if r.key != "" && s.keys[r.key] == r {
		delete(s.keys, r.key)
	}
}

// settle turns the run's outcome into the record's terminal response.
func (s *Service) settle(rec *record, res *agent.Result, err error) {
	resp := outcome(rec.response(), res, err)
	if verr := resp.Validate(); verr != nil {
		resp.Status, resp.Output, resp.Error = delegation.StatusFailed, nil, delegation.ErrorInfoOf(verr)
	}
	rec.mu.Lock()
	rec.resp, rec.ended = resp, time.Now()
	rec.mu.Unlock()
	close(rec.done)
}

// outcome maps a run's result onto resp (REF 6.2.1): completed is
// succeeded with the output; interrupted and canceled are canceled;
// failed, aborted and an infrastructure error are failed.
func outcome(resp delegation.Response, res *agent.Result, err error) delegation.Response {
	resp.Output, resp.Error = nil, nil
	if res == nil {
		if err == nil {
			err = fault.New(fault.Internal, "delegate", "the run returned no result")
		}
		resp.Status = delegation.StatusFailed
		if k := fault.KindOf(fault.FromContext(err, "delegate")); k == fault.Aborted || k == fault.Timeout {
			resp.Status = delegation.StatusCanceled
		}
		resp.Error = delegation.ErrorInfoOf(fault.FromContext(err, "delegate"))
		return resp
	}
	resp.RunID = res.RunID
	switch res.Status {
	case agent.StatusCompleted:
		resp.Status, resp.Output = delegation.StatusSucceeded, res.Output
		return resp
	case agent.StatusInterrupted, agent.StatusCanceled:
		resp.Status = delegation.StatusCanceled
	default:
		resp.Status = delegation.StatusFailed
	}
	cause := res.Err
	if cause == nil {
		cause = fault.New(fault.Internal, "delegate", "run %s ended %s", res.RunID, res.Status)
	}
	resp.Error = delegation.ErrorInfoOf(cause)
	return resp
}
