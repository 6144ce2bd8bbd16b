package event

import (
	"sync"
	"sync/atomic"
)

// observers is a copy-on-write list of observers: readers load a snapshot
// without locking, writers replace it under mu.
type observers struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*observerEntry]
}

type observerEntry struct{ o Observer }

// add registers o and returns the function that removes it; removing twice
// is a no-op.
func (s *observers) add(o Observer) func() {
	if o == nil {
		return func() {}
	}
	e := &observerEntry{o: o}
	s.mu.Lock()
	old := s.snapshot()
	next := make([]*observerEntry, 0, len(old)+1)
	next = append(append(next, old...), e)
	s.list.Store(&next)
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { s.remove(e) }) }
}

func (s *observers) remove(e *observerEntry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.snapshot()
	next := make([]*observerEntry, 0, len(old))
	for _, x := range old {
		if x != e {
			next = append(next, x)
		}
	}
	s.list.Store(&next)
}

func (s *observers) snapshot() []*observerEntry {
	if p := s.list.Load(); p != nil {
		return *p
	}
	return nil
}

func notifyPublish(obs []*observerEntry, env Envelope) {
	for _, e := range obs {
		e.o.OnPublish(env)
	}
}

func notifyDeliver(obs []*observerEntry, pattern string, env Envelope) {
	for _, e := range obs {
		e.o.OnDeliver(pattern, env)
	}
}

func notifyDrop(obs []*observerEntry, pattern string, env Envelope, reason DropReason) {
	for _, e := range obs {
		e.o.OnDrop(pattern, env, reason)
	}
}

// ObserverFuncs adapts functions to an Observer; nil functions are skipped.
type ObserverFuncs struct {
	Publish func(env Envelope)
	Deliver func(pattern string, env Envelope)
	Drop    func(pattern string, env Envelope, reason DropReason)
}

// OnPublish calls Publish.
func (f ObserverFuncs) OnPublish(env Envelope) {
	if f.Publish != nil {
		f.Publish(env)
	}
}

// OnDeliver calls Deliver.
func (f ObserverFuncs) OnDeliver(pattern string, env Envelope) {
	if f.Deliver != nil {
		f.Deliver(pattern, env)
	}
}

// OnDrop calls Drop.
func (f ObserverFuncs) OnDrop(pattern string, env Envelope, reason DropReason) {
	if f.Drop != nil {
		f.Drop(pattern, env, reason)
	}
}

var _ Observer = ObserverFuncs{}
