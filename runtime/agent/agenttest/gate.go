package agenttest

import (
	"context"
	"sync"
)

// Gate parks an engine at a WaitGate step until the test opens it. Make one
// with NewGate. A Gate is safe for concurrent use; once open it stays open,
// so every later WaitGate on it passes at once.
type Gate struct {
	reachOnce sync.Once
	openOnce  sync.Once
	reached   chan struct{}
	open      chan struct{}
}

// NewGate returns a closed gate.
func NewGate() *Gate {
	return &Gate{reached: make(chan struct{}), open: make(chan struct{})}
}

// Open lets every engine waiting at the gate, and every later one, pass.
// It is idempotent.
func (g *Gate) Open() { g.openOnce.Do(func() { close(g.open) }) }

// Reached is closed once an engine has reached a WaitGate step on g, so a
// test can wait until the engine is parked there.
func (g *Gate) Reached() <-chan struct{} { return g.reached }

// Opened is closed once Open has been called.
func (g *Gate) Opened() <-chan struct{} { return g.open }

func (g *Gate) wait(ctx context.Context) error {
	g.reachOnce.Do(func() { close(g.reached) })
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
