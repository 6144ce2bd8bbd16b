package session

// Test hooks for states that the public API reaches only transiently.

// MarkClosing marks the live session of k closing and leaves its entry in
// place: the state of a session whose close is under way. It reports
// whether k had a live session.
func MarkClosing(m *Manager, k Key) bool {
	m.mu.Lock()
	e := m.entries[k]
	m.mu.Unlock()
	if e == nil {
		return false
	}
	e.s.markClosing()
	return true
}

// IdleTimer returns the timer generation of k's entry and whether its idle
// timer is armed; ok is false when k has no entry.
func IdleTimer(m *Manager, k Key) (gen uint64, armed, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[k]
	if e == nil {
		return 0, false, false
	}
	return e.timerGen, e.timer != nil, true
}

// FireIdleTimer runs the idle timer's callback for k as a timer armed at
// generation gen would, and reports whether k had an entry.
func FireIdleTimer(m *Manager, k Key, gen uint64) bool {
	m.mu.Lock()
	e := m.entries[k]
	m.mu.Unlock()
	if e == nil {
		return false
	}
	m.reclaim(e, gen)
	return true
}

// SetReclaimHook makes fn run inside every idle-timer reclaim of m, under
// the manager's lock, once the entry, generation and lease checks passed
// and before idleness is checked. Set it before m is used.
func SetReclaimHook(m *Manager, fn func(s *Session)) { m.hooks.reclaimChecked = fn }

// SetRemovePollHook makes fn run before each attempt of RemoveAgent to
// close the agent's sessions. Set it before m is used.
func SetRemovePollHook(m *Manager, fn func()) { m.hooks.removePoll = fn }

// BeginStart marks a start in flight on s, as Start does between its checks
// and its turn; EndStart clears the mark.
func BeginStart(s *Session) error { return s.beginStart(false) }

// EndStart clears the mark set by BeginStart.
func EndStart(s *Session) { s.endStart() }
