package session

import (
	"context"

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
