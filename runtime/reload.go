package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
)

// ReloadConfig configures ReloadWithConfig. The zero value is what Reload
// uses.
type ReloadConfig struct {
	// Force rebuilds even when the document is unchanged, for example to
	// pick up a changed file that the document references with {file}.
	// false: an unchanged document is reported, not rebuilt.
	Force bool
}

// ReloadResult reports a Reload. ReboundAgents are the registered agents
// bound again to the new generation and DrainedAgents the deployed agents
// the new document dropped, both sorted. Unchanged means the document was
// the serving one: nothing was built and GenerationID is the serving
// generation's id.
type ReloadResult struct {
	GenerationID  uint64
	PreviousID    uint64
	ReboundAgents []string
	DrainedAgents []string
	Unchanged     bool
}

// Reload replaces the serving generation with one built from doc
// (REF 1.10): build the new generation, swap it in, and retire the
// old one once its last in-flight turn has ended. Turns that are running
// finish on the generation they started on; the next Start uses the new
// one. Registered agents are bound again to the new generation; deployed
// agents that doc drops are drained first. Any failure leaves the serving
// generation exactly as it was and returns the error.
//
// Every attempt gets a new generation id before doc is validated and is
// announced with runtime.rebuild.started, then ends in exactly one of
// runtime.rebuild.completed or runtime.rebuild.failed. A document whose
// content (doc.Hash) and base directory equal the serving one's is not
// rebuilt unless ReloadConfig.Force is set: the result says Unchanged and
// no event is published. After Close, or once Drain was called, Reload
// returns NotAvailable.
func (rt *Runtime) Reload(ctx context.Context, doc *deploy.Document) (*ReloadResult, error) {
	return rt.ReloadWithConfig(ctx, doc, ReloadConfig{})
}

// ReloadWithConfig is Reload configured by cfg.
func (rt *Runtime) ReloadWithConfig(ctx context.Context, doc *deploy.Document, cfg ReloadConfig) (*ReloadResult, error) {
	const op = "reload"
	switch {
	case ctx == nil:
		return nil, fault.New(fault.Validation, op, "ctx must not be nil")
	case doc == nil:
		return nil, fault.New(fault.Validation, op, "document must not be nil")
	}
	rt.lifecycle.Lock()
	defer rt.lifecycle.Unlock()
	if err := rt.usable(op, true); err != nil {
		return nil, err
	}
	cur := rt.current()
	if !cfg.Force && cur.hash == doc.Hash() && cur.doc.BaseDir() == doc.BaseDir() {
		return &ReloadResult{GenerationID: cur.id, PreviousID: cur.id, Unchanged: true}, nil
	}
	id := rt.allocateGeneration()
	rt.publish(ctx, event.SubjectRebuildStarted(), event.RebuildPayload{GenerationID: id})
	res, err := rt.reload(ctx, id, cur, doc)
	if err != nil {
		err = fmt.Errorf("reload generation %d: %w", id, err)
		rt.publish(ctx, event.SubjectRebuildFailed(), event.RebuildPayload{GenerationID: id, Error: err.Error()})
		return nil, err
	}
	rt.publish(ctx, event.SubjectRebuildCompleted(), event.RebuildPayload{
		GenerationID: id, PreviousGenerationID: cur.id, ReboundAgents: res.ReboundAgents, DrainedAgents: res.DrainedAgents,
	})
	return res, nil
}

// allocateGeneration returns the next generation id; ids of failed
// attempts are never reused (REF 1.10.2).
func (rt *Runtime) allocateGeneration() uint64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	id := rt.nextGen
	rt.nextGen++
	return id
}

// reload builds the next generation and swaps it in. On failure it undoes
// what the attempt changed in the session manager.
func (rt *Runtime) reload(ctx context.Context, id uint64, cur *generation, doc *deploy.Document) (_ *ReloadResult, err error) {
	prevTunables := rt.sessions.Tunables()
	var drained []string
	tuned := false
	defer func() {
		if err == nil {
			return
		}
		for _, name := range drained {
			rt.sessions.ReopenAgent(name)
		}
		if tuned {
			_ = rt.sessions.UpdateTunables(prevTunables) // valid before, so only a closed manager refuses it
		}
	}()
	next, rebound, drained, err := rt.buildNext(ctx, id, cur, doc)
	if err != nil {
		return nil, err
	}
	// REF 1.10.3.11: idle_timeout and max_sessions apply at once, the
	// rest to sessions created later.
	if err := rt.sessions.UpdateTunables(next.cfg.Sessions.Tunables); err != nil {
		return nil, errors.Join(err, next.close())
	}
	tuned = true
	if err := rt.swap(cur, next); err != nil {
		return nil, errors.Join(err, next.close())
	}
	_ = rt.sessions.UpdateQuotas(next.cfg.Tenants) // checked when the section was decoded
	return &ReloadResult{GenerationID: id, PreviousID: cur.id, ReboundAgents: rebound, DrainedAgents: drained}, nil
}

// buildNext is the build half of a reload (REF 1.10.3): the new
// generation, the session manager bound into it, the registered agents
// bound again, the dropped agents drained and the tombstones of the new
// document's agents cleared. drained lists the
// agents it tombstoned, also on failure, so that the caller can reopen
// them. On failure the new generation is closed.
func (rt *Runtime) buildNext(ctx context.Context, id uint64, cur *generation, doc *deploy.Document) (_ *generation, rebound, drained []string, err error) {
	next, err := rt.buildGeneration(ctx, id, doc, cur)
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, next.close())
		}
	}()
	if err = bindManager(next, rt.sessions); err != nil {
		return nil, nil, nil, err
	}
	if rebound, err = rebindDynamic(ctx, cur, next); err != nil {
		return nil, nil, nil, err
	}
	if drained, err = rt.drainDropped(ctx, cur, next); err != nil {
		return nil, nil, drained, err
	}
	for _, name := range next.result.AgentNames() {
		rt.sessions.ReopenAgent(name)
	}
	return next, rebound, drained, nil
}

// rebindDynamic binds every registered agent of cur, in sorted order,
// against next with its definition and WithToolAssembly name
// (REF 1.10.3.8). The instances join next, which closes them if the
// reload fails.
func rebindDynamic(ctx context.Context, cur, next *generation) ([]string, error) {
	ids := cur.dynamicIDs()
	for _, id := range ids {
		e, ok := cur.dynamicAgent(id)
		if !ok {
			continue
		}
		if _, deployed := next.result.Agent(id); deployed {
			return nil, fault.New(fault.Conflict, "rebind agent", "registered agent %q is a deployed agent of the new document", id)
		}
		ne, err := bindDynamic(ctx, "rebind agent", next, id, e.def, e.assembly)
		if err != nil {
			return nil, err
		}
		next.putDynamic(ne)
	}
	return ids, nil
}

// drainDropped removes, before the swap, each deployed agent of cur that
// next does not deploy: its sessions are drained and closed
// (REF 1.10.3.9). It returns the agents it tombstoned, sorted.
func (rt *Runtime) drainDropped(ctx context.Context, cur, next *generation) ([]string, error) {
	var drained []string
	for _, name := range cur.result.AgentNames() {
		if _, kept := next.result.Agent(name); kept {
			continue
		}
		drained = append(drained, name)
		if err := rt.sessions.RemoveAgent(ctx, name); err != nil {
			return drained, fmt.Errorf("drain agent %q: %w", name, err)
		}
	}
	return drained, nil
}

// swap commits a reload (REF 1.10.4): the router adds next's bus,
// then Resource, Agent and the session manager's epoch switch to next in
// one step under the runtime lock. cur keeps the registered agents it
// served (it adopts them) and is retired when its last turn ends.
func (rt *Runtime) swap(cur, next *generation) error {
	if err := rt.router.AddBus(next.bus); err != nil {
		return fault.Wrap(fault.KindOr(err, fault.Internal), err, "reload", "add the new bus to the router")
	}
	r := &retirement{run: func() { rt.retire(cur) }}
	rt.mu.Lock()
	if err := rt.sessions.SwapDeps(next.sessionDeps(), r.fire); err != nil {
		rt.mu.Unlock()
		rt.router.RemoveBus(next.bus)
		return err
	}
	rt.gen = next
	rt.mu.Unlock()
	r.arm()
	return nil
}

// retire removes g's bus from the router and closes g: its resources, its
// deployed agents and the registered agents it adopted. It runs once, when
// g's last turn has ended. A close error has no caller to go to; it is
// logged.
func (rt *Runtime) retire(g *generation) {
	rt.router.RemoveBus(g.bus)
	if err := g.close(); err != nil {
		slog.Default().Warn("closing a retired generation failed", "generation", g.id, "error", err)
	}
}

// retirement runs a retire hook at most once, and never while the swap
// that installed it still holds the runtime lock: a hook that fires during
// the swap is deferred until arm.
type retirement struct {
	mu    sync.Mutex
	armed bool
	due   bool
	run   func()
}

func (r *retirement) fire() {
	r.mu.Lock()
	if !r.armed {
		r.due = true
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	r.run()
}

func (r *retirement) arm() {
	r.mu.Lock()
	r.armed = true
	due := r.due
	r.mu.Unlock()
	if due {
		r.run()
	}
}
