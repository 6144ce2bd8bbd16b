package session

import (
	"context"
	"errors"

	"github.com/corral-rt/corral/fault"
)

// RemoveAgent tombstones an agent (new opens: NotFound), waits bounded by
// ctx until its sessions are idle, then closes and removes them
// (REF 2.8.4). The idleness of every session is checked and the
// sessions marked closing in one step, so that no turn starts in between.
// On ctx expiry the tombstone stays, the sessions are untouched and the ctx
// error is returned. Repeated calls are idempotent.
func (m *Manager) RemoveAgent(ctx context.Context, name string) error {
	if ctx == nil {
		return fault.New(fault.Validation, "remove agent", "ctx must not be nil")
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrManagerClosed
	}
	m.tombstones[name] = true
	for k, e := range m.entries {
		if k.AgentID == name {
			m.stopTimerLocked(e)
		}
	}
	m.mu.Unlock()
	var closing []*entry
	err := pollUntil(ctx, func() bool {
		if h := m.hooks.removePoll; h != nil {
			h()
		}
		var ok bool
		closing, ok = m.takeIfIdle(name)
		return ok
	})
	if err != nil {
		return err
	}
	m.closeEntries(closing)
	return nil
}

// takeIfIdle removes the entries of agent name and marks their sessions
// closing when every one of them is idle; otherwise it changes nothing.
// It holds every session's lock at once (always after m.mu), so that the
// check and the mark are one step.
func (m *Manager) takeIfIdle(name string) ([]*entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var taken []*entry
	for k, e := range m.entries {
		if k.AgentID == name {
			taken = append(taken, e)
		}
	}
	for _, e := range taken {
		e.s.mu.Lock()
		defer e.s.mu.Unlock()
	}
	for _, e := range taken {
		if e.s.busyLocked() {
			return nil, false
		}
	}
	for _, e := range taken {
		e.s.closing = true
		delete(m.entries, e.s.key)
	}
	return taken, true
}

// ReopenAgent clears the agent's tombstone (REF 2.8.5) and re-arms
// the idle timers that the tombstone stopped.
func (m *Manager) ReopenAgent(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.tombstones[name] {
		return
	}
	delete(m.tombstones, name)
	for k, e := range m.entries {
		if k.AgentID == name {
			m.armTimerLocked(e)
		}
	}
}

// deleteMark is the mark of one running DeleteSession; the map holds a
// pointer so that a delete only ever removes its own mark.
type deleteMark struct{}

// DeleteSession removes one session's durable state by key and closes its
// live session (REF 2.7): new opens for the key are refused while it
// runs, the live session is drained (bounded by ctx) before anything durable
// is removed, and on ctx expiry everything rolls back and the ctx error is
// returned. It is retryable and idempotent: a key with no live session and
// no stored state returns nil. With a checkpoint store it takes the
// key's claim from the session ownership before it removes anything, as a
// turn does (REF 12.3.8): a key whose turn runs on another node is refused
// with an *OwnedError naming that node, and no turn starts anywhere while
// the state is removed.
func (m *Manager) DeleteSession(ctx context.Context, key Key) error {
	if ctx == nil {
		return fault.New(fault.Validation, "delete session", "ctx must not be nil")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := key.Validate(); err != nil {
		return err
	}
	mark, e, err := m.markDeleting(key)
	if err != nil {
		return err
	}
	defer m.unmarkDeleting(key, mark)
	if e != nil {
		if err := m.closeForDelete(ctx, key, e); err != nil {
			return err
		}
	}
	deps := m.Deps()
	if deps.Checkpoints == nil {
		return nil
	}
	claim, err := claimForDelete(ctx, deps.Ownership, key)
	if err != nil {
		return err
	}
	defer releaseForDelete(claim)
	return deleteDurable(ContextWithClaim(ctx, claim), deps.Checkpoints, key)
}

// claimForDelete acquires key for a delete of its durable state (REF
// 12.3.8), as a turn does: while the delete holds the claim no turn of the
// key runs on any node, and the store's writes are fenced by it. A key
// another node holds is refused with that node's *OwnedError.
func claimForDelete(ctx context.Context, own Ownership, key Key) (Claim, error) {
	if own == nil {
		return newLocalClaim(), nil
	}
	c, err := own.Acquire(ctx, key)
	var owned *OwnedError
	switch {
	case errors.As(err, &owned):
		owned.Op = "delete session"
		return nil, err
	case err != nil:
		return nil, err
	case c == nil:
		return nil, fault.New(fault.Internal, "delete session", "ownership returned a nil claim for %s", key)
	}
	return c, nil
}

// releaseForDelete gives a delete's claim up.
func releaseForDelete(c Claim) {
	ctx, cancel := context.WithTimeout(context.Background(), durableTimeout)
	defer cancel()
	_ = c.Release(ctx) // a lease not deleted lapses after its TTL
}

// markDeleting marks key as being deleted and returns its live entry
// (REF 2.7.1–2.7.3).
func (m *Manager) markDeleting(key Key) (*deleteMark, *entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, nil, ErrManagerClosed
	}
	if m.deleting[key] != nil {
		return nil, nil, fault.New(fault.NotAvailable, "delete session", "a delete of %s is already running", key)
	}
	e := m.entries[key]
	if e != nil && e.s.isClosing() && e.s.busy() {
		return nil, nil, fault.New(fault.NotAvailable, "delete session", "session %s is closing with an active turn; retry", key)
	}
	mark := &deleteMark{}
	m.deleting[key] = mark
	if e != nil {
		m.stopTimerLocked(e)
	}
	return mark, e, nil
}

// unmarkDeleting removes mark, if it is still the key's mark, and re-arms
// the idle timer of the key's entry when it is still there.
func (m *Manager) unmarkDeleting(key Key, mark *deleteMark) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.deleting[key] != mark {
		return
	}
	delete(m.deleting, key)
	if e := m.entries[key]; e != nil {
		m.armTimerLocked(e)
	}
}

// closeForDelete waits, bounded by ctx, until e's session is idle and
// marks it closing in the same step, so no turn can start in between; then
// it closes the session and removes its entry (REF 2.7.4, 2.7.5). On
// ctx expiry nothing has changed and the ctx error is returned. A turn that
// does not stop within the close budget (which the atomic mark rules out,
// but the check stays) leaves the entry, closing, and returns a retryable
// NotAvailable.
func (m *Manager) closeForDelete(ctx context.Context, key Key, e *entry) error {
	if err := pollUntil(ctx, e.s.closeIfIdle); err != nil {
		return err
	}
	m.notifyClosing(e.s)
	if err := e.s.close(m.closeTimeout); err != nil {
		return fault.Wrap(fault.NotAvailable, err, "delete session", "%s: retry", key)
	}
	m.mu.Lock()
	owner := m.entries[key] == e
	if owner {
		delete(m.entries, key)
	}
	m.mu.Unlock()
	if owner {
		m.notifyClosed(e.s, nil)
	}
	return nil
}
