package graph

import (
	"context"
	"sync"

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
// without an error or a request id is the node's, encoded at build.
func (r *runState) publishStep(ctx context.Context, kind stepKind, n *builtNode, p event.StepPayload) {
	p.NodeID, p.Graph = n.id, r.e.doc.Name
	var payload any
	switch {
	case p.Error != "" || p.RequestID != "":
		payload = p
	case p.Skipped && n.skipped != nil:
		payload = n.skipped
	case !p.Skipped && n.plain != nil:
		payload = n.plain
	default:
		payload = p
	}
	pctx := ctx
	if ctx.Err() != nil {
		pctx = context.WithoutCancel(ctx) // a step error of a cancelled run is still worth publishing
	}
	if err := r.publish(pctx, r.stepSubject(kind, n), payload, n.id); err != nil {
		r.logger.WarnContext(ctx, "graph step event not published", "graph", r.e.doc.Name, "run_id", r.run.ID,
			"node", n.id, "error", err)
	}
}
