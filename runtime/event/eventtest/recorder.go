package eventtest

import (
	"sync"

	"github.com/corral-rt/corral/runtime/event"
)

// Recorder is an event.Observer that records what it sees, for tests. It is
// safe for concurrent use.
type Recorder struct {
	mu         sync.Mutex
	publishes  []string
	deliveries []string
	drops      []string
}

var _ event.Observer = (*Recorder)(nil)

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{} }

// OnPublish records the subject.
func (r *Recorder) OnPublish(env event.Envelope) {
	r.mu.Lock()
	r.publishes = append(r.publishes, env.Subject)
	r.mu.Unlock()
}

// OnDeliver records "pattern|subject".
func (r *Recorder) OnDeliver(pattern string, env event.Envelope) {
	r.mu.Lock()
	r.deliveries = append(r.deliveries, pattern+"|"+env.Subject)
	r.mu.Unlock()
}

// OnDrop records "subject|payload-string|reason"; the payload is decoded
// when it is a JSON string and kept raw otherwise.
func (r *Recorder) OnDrop(_ string, env event.Envelope, reason event.DropReason) {
	var s string
	if env.Decode(&s) != nil || s == "" {
		s = string(env.Payload)
	}
	r.mu.Lock()
	r.drops = append(r.drops, env.Subject+"|"+s+"|"+string(reason))
	r.mu.Unlock()
}

// Publishes returns the published subjects in order.
func (r *Recorder) Publishes() []string { return r.snapshot(&r.publishes) }

// Deliveries returns "pattern|subject" for each delivery.
func (r *Recorder) Deliveries() []string { return r.snapshot(&r.deliveries) }

// Drops returns "subject|payload|reason" for each drop.
func (r *Recorder) Drops() []string { return r.snapshot(&r.drops) }

func (r *Recorder) snapshot(s *[]string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), *s...)
}
