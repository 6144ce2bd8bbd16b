package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/session"
)

// sessionEntry is a session a tenant opened through the native API: the
// Server holds a lease on it until it is deleted.
type sessionEntry struct {
	id      string
	tenant  string
	key     session.Key
	created time.Time
	// deleting is set while a DELETE of the session runs: no turn starts.
	deleting atomic.Bool

	mu    sync.Mutex
	lease *session.Lease // replaced after a delete that failed
	turns []*turnEntry   // oldest first; at most KeepTurns finished ones
}

// session returns the runtime's session the entry leases.
func (e *sessionEntry) session() *session.Session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lease.Session()
}

// release gives back the entry's lease.
func (e *sessionEntry) release() {
	e.mu.Lock()
	l := e.lease
	e.mu.Unlock()
	_ = l.Close()
}

type sessionView struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	ContextID string    `json:"context_id"`
	Created   time.Time `json:"created"`
	Turn      string    `json:"turn,omitempty"` // the latest turn's id
}

func (e *sessionEntry) view() sessionView {
	e.mu.Lock()
	defer e.mu.Unlock()
	v := sessionView{ID: e.id, Agent: e.key.AgentID, ContextID: e.key.ContextID, Created: e.created}
	if n := len(e.turns); n > 0 {
		v.Turn = e.turns[n-1].turn.RunID()
	}
	return v
}

// addTurn records te, dropping the oldest finished turns past keep.
func (e *sessionEntry) addTurn(te *turnEntry, keep int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.turns = append(e.turns, te)
	for len(e.turns) > keep+1 {
		e.turns[0].log.detach()
		e.turns = e.turns[1:]
	}
}

func (e *sessionEntry) findTurn(id string) (*turnEntry, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, te := range e.turns {
		if te.turn.RunID() == id {
			return te, true
		}
	}
	return nil, false
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// MaxContextIDBytes bounds the context id a client names (REF 11.8.10).
const MaxContextIDBytes = 256

// openRequest is the body of POST /api/sessions.
type openRequest struct {
	Agent     string `json:"agent"`
	ContextID string `json:"context_id,omitempty"`
}

// decodeOpenRequest reads and checks the body of POST /api/sessions.
func decodeOpenRequest(r io.Reader) (openRequest, error) {
	var req openRequest
	if err := decodeJSON(r, &req, true); err != nil {
		return req, err
	}
	if req.Agent == "" {
		return req, fault.New(fault.Validation, "open session", "agent is required")
	}
	if req.ContextID != "" {
		if err := checkContextID(req.ContextID); err != nil {
			return req, fault.Wrap(fault.Validation, err, "open session", "context_id")
		}
		if err := (session.Key{AgentID: req.Agent, ContextID: req.ContextID}).Validate(); err != nil {
			return req, err
		}
	}
	return req, nil
}

// checkContextID refuses a context id longer than MaxContextIDBytes, not
// UTF-8, or with a control character: it names the session in every log
// line, event header and span of its turns.
func checkContextID(id string) error {
	if len(id) > MaxContextIDBytes {
		return fault.New(fault.Validation, "", "%d bytes long; at most %d", len(id), MaxContextIDBytes)
	}
	if !utf8.ValidString(id) {
		return fault.New(fault.Validation, "", "not UTF-8")
	}
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		return fault.New(fault.Validation, "", "a control character at byte %d", i)
	}
	return nil
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	type agentView struct {
		ID   string          `json:"id"`
		Card agent.AgentCard `json:"card"`
	}
	out := []agentView{}
	for _, a := range s.agentsOf(tenantOf(r.Context())) {
		out = append(out, agentView{ID: a.ID, Card: a.Definition.Card})
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

// openSession opens (or finds) the tenant's session of an agent and a
// context id: 201 for a new one, 200 for one the tenant has open.
func (s *Server) openSession(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r.Context())
	req, err := decodeOpenRequest(r.Body)
	if err == nil {
		_, err = s.agentOf(tenant, req.Agent)
	}
	if err == nil {
		err = s.admit()
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id := newID("ses_")
	if req.ContextID == "" {
		req.ContextID = id
	}
	key := session.Key{AgentID: req.Agent, ContextID: req.ContextID}
	open, p, err := s.reserveSession(tenant, key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if open != nil {
		writeJSON(w, http.StatusOK, open.view())
		return
	}
	defer p.release()
	lease, err := s.rt.Sessions().Open(r.Context(), key)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e := &sessionEntry{id: id, tenant: tenant, key: key, lease: lease, created: time.Now()}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = lease.Close()
		s.writeError(w, r, errDraining)
		return
	}
	if other, ok := s.byKey[key]; ok { // opened meanwhile
		s.mu.Unlock()
		_ = lease.Close()
		writeJSON(w, http.StatusOK, other.view())
		return
	}
	s.addSessionLocked(e)
	s.mu.Unlock()
	p.release() // the session counts itself now
	s.log.Info("session opened", "tenant", tenant, "session", id, "agent", key.AgentID, "context", key.ContextID)
	writeJSON(w, http.StatusCreated, e.view())
}

// addSessionLocked records the session e, whose key has no entry.
func (s *Server) addSessionLocked(e *sessionEntry) {
	s.sessions[e.id], s.byKey[e.key] = e, e
	s.tenantSessions[e.tenant]++
}

// removeSessionLocked forgets the session e and reports whether it was
// recorded (not forgotten already).
func (s *Server) removeSessionLocked(e *sessionEntry) bool {
	if s.sessions[e.id] != e {
		return false
	}
	delete(s.sessions, e.id)
	if s.byKey[e.key] == e {
		delete(s.byKey, e.key)
	}
	if s.tenantSessions[e.tenant]--; s.tenantSessions[e.tenant] <= 0 {
		delete(s.tenantSessions, e.tenant)
	}
	return true
}

// place is a tenant's place among the sessions it may hold, taken by
// reserveSession until release. Its owner releases it, once or more, from
// one goroutine; the zero place holds nothing.
type place struct {
	s      *Server
	tenant string
}

// release gives the place back; again, it does nothing.
func (p *place) release() {
	s := p.s
	if s == nil {
		return
	}
	p.s = nil
	s.mu.Lock()
	if s.opening[p.tenant]--; s.opening[p.tenant] == 0 {
		delete(s.opening, p.tenant)
	}
	s.mu.Unlock()
}

// reserveSession finds the tenant's open session of key, or takes a place
// among the sessions the tenant may hold (REF 11.1.9) until its release:
// the opens in flight count, so that many at once cannot pass the share.
// A session of key that another tenant holds (its agent changed tenant in
// a reload) is retired.
func (s *Server) reserveSession(tenant string, key session.Key) (open *sessionEntry, p place, err error) {
	limit := s.sessionsPerTenant()
	s.mu.Lock()
	e := s.byKey[key]
	if e != nil && e.tenant == tenant {
		s.mu.Unlock()
		return e, place{}, nil
	}
	stale := e // another tenant's: the agent was theirs before a reload
	held := s.opening[tenant] + s.tenantSessions[tenant]
	if held >= limit {
		s.mu.Unlock()
		return nil, place{}, &sessionsQuotaError{tenant: tenant, limit: limit}
	}
	s.opening[tenant]++
	s.mu.Unlock()
	if stale != nil {
		s.retire(stale)
	}
	return nil, place{s: s, tenant: tenant}, nil
}

// reserveChatSession takes a place among the sessions the tenant may hold
// for a chat completion's session until its release (REF 11.1.11): a
// completion's session counts against the same share as the native API's
// sessions while its turn runs. A session of key the tenant holds open
// through the native API takes no second place (the zero place).
func (s *Server) reserveChatSession(tenant string, key session.Key) (place, error) {
	_, p, err := s.reserveSession(tenant, key)
	return p, err
}

// sessionsPerTenant is how many sessions one tenant may hold open
// (Options.MaxSessionsPerTenant).
func (s *Server) sessionsPerTenant() int {
	if s.opts.MaxSessionsPerTenant > 0 {
		return s.opts.MaxSessionsPerTenant
	}
	return max(1, s.rt.Config().Sessions.MaxSessions/(s.tenants+1))
}

// sessionsQuotaError refuses a session past a tenant's share
// (Options.MaxSessionsPerTenant): 429 naming the quota "sessions".
type sessionsQuotaError struct {
	tenant string
	limit  int
}

func (e *sessionsQuotaError) Error() string {
	return fmt.Sprintf("tenant %q: quota sessions of %d reached (the sessions one tenant may hold open on this server; delete one to open another)", e.tenant, e.limit)
}

func (e *sessionsQuotaError) Unwrap() error { return fault.BudgetExceeded }

// session finds the tenant's session of the request's {sid}: another
// tenant's is NotFound, as a missing one, and so is a session of an agent
// a reload gave to another tenant.
func (s *Server) session(r *http.Request) (*sessionEntry, error) {
	id := r.PathValue("sid")
	s.mu.Lock()
	e, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok || !s.owns(tenantOf(r.Context()), e) {
		return nil, fault.New(fault.NotFound, "serve", "session %q not found", id)
	}
	return e, nil
}

// owns reports whether e is the tenant's: the tenant opened it and its
// agent is still the tenant's (REF 11.1.10).
func (s *Server) owns(tenant string, e *sessionEntry) bool {
	if e.tenant != tenant {
		return false
	}
	_, err := s.agentOf(tenant, e.key.AgentID)
	return err == nil
}

// retire forgets a session whose agent a reload gave to another tenant:
// its turn is interrupted and its lease released; its stored state stays
// with the agent.
func (s *Server) retire(e *sessionEntry) {
	s.mu.Lock()
	forget := s.removeSessionLocked(e)
	s.mu.Unlock()
	if !forget {
		return
	}
	if t := e.session().Turn(); t != nil {
		_ = t.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "the session's agent belongs to another tenant now"})
	}
	e.mu.Lock()
	for _, te := range e.turns {
		te.log.detach()
	}
	e.mu.Unlock()
	e.release()
	s.log.Info("session retired: its agent belongs to another tenant", "tenant", e.tenant, "session", e.id, "agent", e.key.AgentID)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r.Context())
	s.mu.Lock()
	var list []*sessionEntry
	for _, e := range s.sessions {
		if e.tenant == tenant {
			list = append(list, e)
		}
	}
	s.mu.Unlock()
	list = slices.DeleteFunc(list, func(e *sessionEntry) bool { return !s.owns(tenant, e) })
	slices.SortFunc(list, func(a, b *sessionEntry) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]sessionView, 0, len(list))
	for _, e := range list {
		out = append(out, e.view())
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	e, err := s.session(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e.view())
}

// deleteSession interrupts the session's turn, removes its durable state
// and only then forgets it: a delete that fails leaves the session listed
// and answers with the error, so that it can be retried (REF 11.3.8).
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	e, err := s.session(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e.deleting.Store(true)
	if t := e.session().Turn(); t != nil {
		_ = t.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "the session is being deleted"})
	}
	if err := s.rt.Sessions().DeleteSession(r.Context(), e.key); err != nil {
		s.renewLease(e)
		e.deleting.Store(false)
		s.writeError(w, r, err)
		return
	}
	s.mu.Lock()
	forget := s.removeSessionLocked(e)
	s.mu.Unlock()
	if forget { // not already forgotten by a delete racing this one
		e.mu.Lock()
		for _, te := range e.turns {
			te.log.detach()
		}
		e.mu.Unlock()
		e.release()
	}
	s.log.Info("session deleted", "tenant", e.tenant, "session", e.id)
	w.WriteHeader(http.StatusNoContent)
}

// renewLease gives e a new lease on its key after a delete that failed:
// the delete may have closed the live session before the store refused,
// and the session stays the tenant's to use (REF 11.3.8). When the
// runtime refuses the open, e keeps its lease and its turns are refused
// until the delete is tried again.
func (s *Server) renewLease(e *sessionEntry) {
	l, err := s.rt.Sessions().Open(context.Background(), e.key)
	if err != nil {
		return
	}
	s.mu.Lock()
	keep := !s.closed && s.sessions[e.id] == e
	old := l
	if keep {
		e.mu.Lock()
		old, e.lease = e.lease, l
		e.mu.Unlock()
	}
	s.mu.Unlock()
	_ = old.Close()
}
