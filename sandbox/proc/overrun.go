package proc

import (
	"sync"
	"time"
)

// overrunWatch is a worker's watch on the wall time of its calls: it kills
// the worker when a call runs past its deadline (wall time plus
// overrunGrace). One timer serves all the worker's calls and is left
// armed between them: a call whose deadline is no earlier than the
// timer's leaves it alone, and a timer that fires before the running
// call's deadline re-arms itself for it. Arming a timer per call would
// cost each call a wakeup of another thread of the Go runtime (a timer
// added while no thread waits on the poller starts one), for a kill that
// almost never comes.
type overrunWatch struct {
	mu       sync.Mutex
	t        *time.Timer
	at       time.Time // when t fires; zero when it is not armed
	k        *killer   // the running call's, nil between calls
	deadline time.Time // the running call's
	stopped  bool
}

// start watches the call of k until its deadline.
func (o *overrunWatch) start(k *killer, deadline time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.k, o.deadline = k, deadline
	if o.stopped || (!o.at.IsZero() && !o.at.After(deadline)) {
		return
	}
	o.armLocked(deadline)
}

func (o *overrunWatch) armLocked(at time.Time) {
	o.at = at
	if o.t == nil {
		o.t = time.AfterFunc(time.Until(at), o.fire)
		return
	}
	o.t.Reset(time.Until(at))
}

// end stops watching the call of k (the timer stays armed).
func (o *overrunWatch) end(k *killer) {
	o.mu.Lock()
	if o.k == k {
		o.k = nil
	}
	o.mu.Unlock()
}

// fire kills the running call's worker when its deadline has passed, and
// otherwise re-arms for it.
func (o *overrunWatch) fire() {
	o.mu.Lock()
	o.at = time.Time{}
	k := o.k
	var over bool
	if k != nil && !o.stopped {
		if over = !time.Now().Before(o.deadline); !over {
			o.armLocked(o.deadline)
		}
	}
	o.mu.Unlock()
	if over {
		k.kill(killedOverrun)
	}
}

// stop stops the timer for good (the worker is gone).
func (o *overrunWatch) stop() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	if o.t != nil {
		o.t.Stop()
	}
}
