package js

// Replacing a VM means locking a new one down (realm.go: prepare), a
// millisecond or more. A runtime does it ahead, on a goroutine of its own,
// so that the call that finds no pooled VM rarely pays for it: a VM that
// has run half its calls asks for its replacement, and so does a VM that
// is dropped (after a stop, a failure, code run by eval or Function). The
// ready VMs wait in the runtime's spares, at most one per pool slot.

// wantSpare asks the preparer for one more spare VM; a request beyond
// those already waiting is dropped.
func (r *Runtime) wantSpare() {
	select {
	case r.want <- struct{}{}:
	default:
	}
}

// prepareSpares is the preparer's loop: it prepares one VM per request
// while the spares have room, until the runtime closes. A VM that fails
// to prepare is not retried: the call that finds no VM prepares one
// itself and reports the failure.
func (r *Runtime) prepareSpares() {
	defer close(r.preparerDone)
	for {
		select {
		case <-r.closing:
			return
		case <-r.want:
		}
		select {
		case <-r.closing:
			return
		default:
		}
		if len(r.spares) == cap(r.spares) {
			continue
		}
		c, err := r.prepare()
		if err != nil {
			continue
		}
		select {
		case r.spares <- c:
		default:
		}
	}
}

// drainSpares drops the VMs waiting in the pool and the spares.
func (r *Runtime) drainSpares() {
	r.realms.drain()
	for {
		select {
		case <-r.spares:
		default:
			return
		}
	}
}
