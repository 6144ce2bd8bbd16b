package graph

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/corral-rt/corral/runtime/event"
)

// stepKind names a step event.
type stepKind int

const (
	stepStart stepKind = iota
	stepComplete
	stepError
)

// actorCache keeps the actor of every node (event.Actor) for the agent
// the engine last ran for: an engine normally runs for one agent, so the
// actors are made once rather than per step.
type actorCache struct {
	mu     sync.Mutex
	agent  string
	actors []string // by node index; read-only once made
}

func (a *actorCache) get(e *Engine, agentID string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.actors == nil || a.agent != agentID {
		actors := make([]string, len(e.doc.Nodes))
		for i, n := range e.doc.Nodes {
			actors[i] = event.SanitiseID(event.Actor(agentID, n.ID))
		}
		a.agent, a.actors = agentID, actors
	}
	return a.actors
}

// stepSubject is the subject of a step event, as event.SubjectStepStart,
// event.SubjectStepComplete and event.SubjectStepError make it.
func (r *runState) stepSubject(kind stepKind, n *builtNode) string {
	switch kind {
	case stepStart:
		return r.headers.node(r, n).start
	case stepComplete:
		return r.headers.node(r, n).complete
	}
	actor := r.e.actors.get(r.e, r.run.AgentID)[n.index]
	return event.SubjectPrefixRun + r.runPart + ".step." + actor + ".error"
}

// publishStep publishes a step event; a failure is only logged. A payload
// without an error or a request id is the node's, encoded at build, and
// its start and complete subjects are the run's, checked once: such an
// event is stamped here rather than through event.NewEnvelope, and its
// time is returned (else the zero time).
func (r *runState) publishStep(ctx context.Context, kind stepKind, n *builtNode, p event.StepPayload) (stamped time.Time) {
	pctx := ctx
	if ctx.Err() != nil {
		pctx = context.WithoutCancel(ctx) // a step error of a cancelled run is still worth publishing
	}
	var err error
	if raw, ok := n.stepPayload(p); ok && kind != stepError {
		stamped = time.Now()
		err = r.publishStamped(pctx, kind, n, raw, stamped)
	} else {
		p.NodeID, p.Graph = n.id, r.e.doc.Name
		err = r.publish(pctx, r.stepSubject(kind, n), p, "")
	}
	if err != nil {
		r.logger.WarnContext(ctx, "graph step event not published", "graph", r.e.doc.Name, "run_id", r.run.ID,
			"node", n.id, "error", err)
	}
	return stamped
}

// stepPayload returns the payload of p encoded at build, when p is one of
// the two plain payloads.
func (n *builtNode) stepPayload(p event.StepPayload) (json.RawMessage, bool) {
	switch {
	case p.Error != "" || p.RequestID != "":
		return nil, false
	case p.Skipped:
		return n.skipped, n.skipped != nil
	}
	return n.plain, n.plain != nil
}

// publishStamped publishes step start or step complete of n, at now, with
// its payload encoded at build: one clock reading for the id and the time,
// the headers and subject made once per node and run.
func (r *runState) publishStamped(ctx context.Context, kind stepKind, n *builtNode, raw json.RawMessage, now time.Time) error {
	ev := r.headers.node(r, n)
	subject, err := ev.start, ev.startErr
	if kind == stepComplete {
		subject, err = ev.complete, ev.completeErr
	}
	if err != nil {
		return err
	}
	return r.host.Publish(ctx, event.Envelope{ID: r.ids.NewAt(now), Subject: subject, Time: now, Payload: raw,
		Headers: ev.run, TraceID: r.span.TraceID, SpanID: r.span.SpanID})
}
