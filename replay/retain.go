package replay

// What a Recorder keeps: at most MaxTurns recordings, MaxTenantBytes of
// one tenant's and MaxBytes of all. The bounds are checked when a turn
// starts and when it settles (a running turn's recording grows in
// between, within MaxTurnBytes and the journal's bound). A tenant over its
// own bound loses its own oldest recordings; over a shared bound, the
// tenant that holds the most loses its oldest first, so that one tenant's
// many or big turns do not push out another tenant's.

// tenantUse is what one tenant's recordings hold.
type tenantUse struct {
	bytes int64
	turns int
}

// retainLocked forgets recordings until the Recorder is within its
// bounds. r.mu is held.
func (r *Recorder) retainLocked() {
	sizes := make(map[string]int64, len(r.order))
	use := map[string]*tenantUse{}
	var total int64
	for _, id := range r.order {
		t := r.turns[id]
		n := t.tap.size()
		sizes[id], total = n, total+n
		u := use[t.tenant]
		if u == nil {
			u = &tenantUse{}
			use[t.tenant] = u
		}
		u.bytes += n
		u.turns++
	}
	forgetOldest := func(tenant string) {
		for i, id := range r.order {
			if r.turns[id].tenant != tenant {
				continue
			}
			u := use[tenant]
			u.bytes, u.turns, total = u.bytes-sizes[id], u.turns-1, total-sizes[id]
			delete(r.turns, id)
			r.order = append(r.order[:i:i], r.order[i+1:]...)
			return
		}
	}
	for tenant, u := range use {
		for u.turns > 0 && u.bytes > r.cfg.MaxTenantBytes {
			forgetOldest(tenant)
		}
	}
	for len(r.order) > 0 && total > r.cfg.MaxBytes {
		forgetOldest(heaviest(use, func(u *tenantUse) int64 { return u.bytes }))
	}
	for len(r.order) > r.cfg.MaxTurns {
		forgetOldest(heaviest(use, func(u *tenantUse) int64 { return int64(u.turns) }))
	}
}

// heaviest is the tenant of use with the most by weight (of two alike,
// the first by name, so that the choice does not depend on map order).
func heaviest(use map[string]*tenantUse, weight func(*tenantUse) int64) string {
	best, bestW := "", int64(-1)
	for tenant, u := range use {
		if w := weight(u); u.turns > 0 && (w > bestW || w == bestW && tenant < best) {
			best, bestW = tenant, w
		}
	}
	return best
}

// TenantBytes returns the bytes the recordings of tenant's turns hold
// now: their events and board writes, as MaxTurnBytes counts them, and
// their inputs, as the journal's bound counts them.
func (r *Recorder) TenantBytes(tenant string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, t := range r.turns {
		if t.tenant == tenant {
			n += t.tap.size()
		}
	}
	return n
}
