package session

// anyEntry matches every entry.
func anyEntry(*entry) bool { return true }

// oldestIdleLocked returns the entry matching match that has been idle the
// longest with its idle timer armed — so with no lease, no active turn, no
// delete under way and its agent not tombstoned — or nil; m.mu is held.
func (m *Manager) oldestIdleLocked(match func(*entry) bool) *entry {
	var oldest *entry
	for _, e := range m.entries {
		if e.timer == nil || e.leases > 0 || !match(e) {
			continue
		}
		if oldest == nil || e.idleSeq < oldest.idleSeq {
			oldest = e
		}
	}
	return oldest
}

// evictLocked takes the oldest idle session matching match out of the
// manager to make room for another (REF 2.1.8) and returns it, marked
// closing, for closeEvicted; nil when there is none. Idleness is checked
// and the session marked closing in one step, as the idle reclaim does, so
// that no turn starts in between; a session whose turn started meanwhile
// (through a Session kept after its lease) is passed over. m.mu is held.
func (m *Manager) evictLocked(match func(*entry) bool) *entry {
	for {
		e := m.oldestIdleLocked(match)
		if e == nil {
			return nil
		}
		m.stopTimerLocked(e) // re-armed by sessionChanged once idle again
		if e.s.closeIfIdle() {
			delete(m.entries, e.s.key)
			return e
		}
	}
}

// closeEvicted closes an evicted session, as the idle reclaim closes one,
// without m.mu. Its turn has settled, so the close does not wait.
func (m *Manager) closeEvicted(e *entry) {
	m.logger.Debug("idle session evicted to make room", "session", e.s.key.String(), "tenant", e.tenant)
	m.notifyClosing(e.s)
	m.notifyClosed(e.s, e.s.close(m.closeTimeout))
}
