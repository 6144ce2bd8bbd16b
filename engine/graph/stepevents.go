package graph

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
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
		return r.cache.headers.node(r, n).start
	case stepComplete:
		return r.cache.headers.node(r, n).complete
	}
	actor := r.e.actors.get(r.e, r.run.AgentID)[n.index]
	return event.SubjectPrefixRun + r.cache.runPart + ".step." + actor + ".error"
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
	ev := r.cache.headers.node(r, n)
	subject, err := ev.start, ev.startErr
	if kind == stepComplete {
		subject, err = ev.complete, ev.completeErr
	}
	if err != nil {
		return err
	}
	return r.host.Publish(ctx, event.Envelope{ID: r.cache.ids.NewAt(now), Subject: subject, Time: now, Payload: raw,
		Headers: ev.run, TraceID: r.span.TraceID, SpanID: r.span.SpanID})
}

// publishRunStart publishes run start; a failure is only logged
// (REF 5.7.1).
func (r *runState) publishRunStart(ctx context.Context) {
	if err := r.publishRunStartEnvelope(ctx); err != nil {
		r.logger.WarnContext(ctx, "graph run start not published", "graph", r.e.doc.Name, "run_id", r.run.ID, "error", err)
	}
}

// end publishes run end with a ctx of its own, detached from the run's
// cancellation and bounded by run_end_publish_timeout (REF 5.7.2);
// a failure is joined into the run's error (REF 5.7.4).
func (r *runState) end(parent context.Context, runErr error) error {
	if r.save == nil {
		r.save = r.saveContext(parent)
	}
	r.save = r.save.arm(r.e.opts.RunEndPublishTimeout)
	ctx := r.save
	defer ctx.stop()
	var p any = r.e.runPayload
	if runErr != nil {
		p = event.RunPayload{Graph: r.e.doc.Name, Error: runErr.Error(), ErrorKind: fault.KindOf(runErr).String()}
	}
	if err := r.publishRunEnd(ctx, p); err != nil {
		return errors.Join(runErr, &agent.RunEndPublishError{RunID: r.run.ID, Err: err})
	}
	return runErr
}

// publish publishes payload on subject with the run_id, agent_id and
// graph_id headers, and node_id when node is set.
func (r *runState) publish(ctx context.Context, subject string, payload any, node string) error {
	env, err := event.NewEnvelope(ctx, subject, payload)
	if err != nil {
		return err
	}
	env.Headers = r.cache.headers.get(r, node)
	return r.host.Publish(ctx, env)
}

// headerCache keeps what a run's envelopes share, made at the first
// event that needs it: the run's headers, which its run and step events
// carry, and per node the subjects of its step start and step complete
// and the headers of the events that add node_id (a branch's stream
// deltas). Envelopes are read-only once published (event.Envelope), so
// events share headers maps.
type headerCache struct {
	// cpu is the script time the run's script nodes spent, in
	// nanoseconds: the cpu_ms header of its run end (REF 13.4.4).
	cpu    atomic.Int64
	mu     sync.Mutex
	run    map[string]string
	byNode []nodeEvents // by node index
	// made is set, holding byNode, once the step events of every node
	// are made (a small graph, at its first step event): from then on
	// node reads byNode without the lock.
	made atomic.Pointer[[]nodeEvents]
}

// nodeEvents is what the events of one node of a run share; the errors
// are set when a subject is not valid (longer than event.MaxSubjectLen).
type nodeEvents struct {
	// run is the run's headers (headerCache.run), which step events
	// carry: the node is in their subject and payload.
	run map[string]string
	// withNode is the run's headers and node_id, made at the node's first
	// event that carries them.
	withNode              map[string]string
	start, complete       string
	startErr, completeErr error
}

func (h *headerCache) get(r *runState, node string) map[string]string {
	if node == "" {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.runHeaders(r)
	}
	n, ok := r.e.nodes[node]
	if !ok {
		return newHeaders(r, node)
	}
	ev := h.node(r, n)
	h.mu.Lock()
	defer h.mu.Unlock()
	if ev.withNode == nil {
		ev.withNode = newHeaders(r, node)
	}
	return ev.withNode
}

// runHeaders returns the run's headers without a node; h.mu is held.
func (h *headerCache) runHeaders(r *runState) map[string]string {
	if h.run == nil {
		h.run = newHeaders(r, "")
	}
	return h.run
}

// node returns what n's step events share, made at its first; its run
// headers and subjects are read-only once made.
func (h *headerCache) node(r *runState, n *builtNode) *nodeEvents {
	if made := h.made.Load(); made != nil {
		return &(*made)[n.index]
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byNode == nil {
		h.byNode = make([]nodeEvents, len(r.e.doc.Nodes))
	}
	ev := &h.byNode[n.index]
	if ev.run == nil {
		ev.run = h.runHeaders(r)
		if ev.start == "" {
			h.subjects(r, n.index)
		}
		if len(h.byNode) <= smallGraph { // subjects made every node's
			for i := range h.byNode {
				h.byNode[i].run = ev.run
			}
			h.made.Store(&h.byNode)
		}
	}
	return ev
}

// smallGraph is the most nodes a graph may have for the step subjects of
// all its nodes to be made at once, in one string, at a run's first step
// event: it saves an allocation per node, and a larger graph whose run
// steps through a few of its nodes does not pay for the others.
const smallGraph = 32

// subjects makes the step start and complete subjects of node i, or of
// every node of a small graph, as slices of one string; h.mu is held.
func (h *headerCache) subjects(r *runState, i int) {
	actors := r.e.actors.get(r.e, r.run.AgentID)
	from, to := i, i+1
	if len(actors) <= smallGraph {
		from, to = 0, len(actors)
	}
	prefix := event.SubjectPrefixRun + r.cache.runPart + ".step."
	size := 0
	for _, a := range actors[from:to] {
		size += 2*(len(prefix)+len(a)) + len(".start.complete")
	}
	var b strings.Builder
	b.Grow(size)
	for _, a := range actors[from:to] {
		b.WriteString(prefix)
		b.WriteString(a)
		b.WriteString(".start")
		b.WriteString(prefix)
		b.WriteString(a)
		b.WriteString(".complete")
	}
	all, at := b.String(), 0
	for j, a := range actors[from:to] {
		ev := &h.byNode[from+j]
		start, complete := len(prefix)+len(a)+len(".start"), len(prefix)+len(a)+len(".complete")
		ev.start, ev.complete = all[at:at+start], all[at+start:at+start+complete]
		at += start + complete
		// Their segments are sanitised ids (event.SanitiseID: never empty,
		// no '.', '*' or '>'), so only their length can make them invalid.
		if len(ev.start) > event.MaxSubjectLen {
			ev.startErr = event.ValidateSubject(ev.start)
		}
		if len(ev.complete) > event.MaxSubjectLen {
			ev.completeErr = event.ValidateSubject(ev.complete)
		}
	}
}

func newHeaders(r *runState, node string) map[string]string {
	m := make(map[string]string, 4)
	m[event.HeaderRunID] = r.run.ID
	m[event.HeaderAgentID] = r.run.AgentID
	m[event.HeaderGraphID] = r.e.doc.Name
	if node != "" {
		m[event.HeaderNodeID] = node
	}
	return m
}

// ProviderNamer is implemented by a model.Provider that tells its name
// ("openai"): the call events of an inference node name it as the
// provider, else they name the engine's dependency role that bound it.
type ProviderNamer interface {
	ProviderName() string
}

// publishRunStartEnvelope publishes run start with the run's headers and
// the run's tenant, context id and parent run (event.HeaderTenant,
// event.HeaderContextID, event.HeaderParentRunID), for observers that
// follow turns (REF 13.4.1).
func (r *runState) publishRunStartEnvelope(ctx context.Context) error {
	env, err := event.NewEnvelope(ctx, event.SubjectRunStart(r.run.ID), r.e.runPayload)
	if err != nil {
		return err
	}
	h := r.cache.headers.get(r, "")
	if r.run.Tenant != "" || r.run.ContextID != "" || r.run.ParentRunID != "" {
		m := make(map[string]string, len(h)+3)
		maps.Copy(m, h)
		for _, kv := range [...][2]string{{event.HeaderTenant, r.run.Tenant}, {event.HeaderContextID, r.run.ContextID},
			{event.HeaderParentRunID, r.run.ParentRunID}} {
			if kv[1] != "" {
				m[kv[0]] = kv[1]
			}
		}
		h = m
	}
	env.Headers = h
	return r.host.Publish(ctx, env)
}

// publishRunEnd publishes run end with the run's headers and cpu_ms
// (event.HeaderCPUMs), the script time its script nodes spent, when they
// spent any (REF 13.4.4).
func (r *runState) publishRunEnd(ctx context.Context, payload any) error {
	env, err := event.NewEnvelope(ctx, event.SubjectRunEnd(r.run.ID), payload)
	if err != nil {
		return err
	}
	env.Headers = r.cache.headers.get(r, "")
	if cpu := r.cache.headers.cpu.Load(); cpu > 0 {
		m := make(map[string]string, len(env.Headers)+1)
		maps.Copy(m, env.Headers)
		m[event.HeaderCPUMs] = strconv.FormatFloat(float64(cpu)/float64(time.Millisecond), 'f', 3, 64)
		env.Headers = m
	}
	return r.host.Publish(ctx, env)
}

// publishCall publishes one call of c's node that ran from start to end
// on subject; a failure is only logged (REF 13.4.2, 13.4.3).
func publishCall(ctx context.Context, c *Call, subject string, start, end time.Time, p event.CallPayload) {
	if c.rs != nil {
		p.Graph = c.rs.e.doc.Name
	}
	p.NodeID = c.Node
	pctx := ctx
	if ctx.Err() != nil {
		pctx = context.WithoutCancel(ctx) // the call of a cancelled run still happened
	}
	env, err := event.NewEnvelope(pctx, subject, p)
	if err == nil {
		env.Time = end
		env.Headers = map[string]string{event.HeaderRunID: c.Run.ID, event.HeaderAgentID: c.Run.AgentID,
			event.HeaderNodeID: c.Node, event.HeaderCallStart: start.UTC().Format(time.RFC3339Nano)}
		if p.Graph != "" {
			env.Headers[event.HeaderGraphID] = p.Graph
		}
		err = c.Host.Publish(pctx, env)
	}
	if err != nil {
		logWarn(ctx, c.Host, "call event not published", map[string]any{"node": c.Node, "run_id": c.Run.ID,
			"error": err.Error()})
	}
}

// publishModelCall publishes the model call the inference node made from
// start: the model, the provider, the usage and the error.
func (h *inferenceHandler) publishModelCall(ctx context.Context, c *Call, start time.Time, resp model.Response, err error) {
	provider := h.providerKey
	if n, ok := h.provider.(ProviderNamer); ok && n.ProviderName() != "" {
		provider = n.ProviderName()
	}
	p := event.CallPayload{Name: h.model, Provider: provider,
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, TotalTokens: resp.Usage.TotalTokens,
		FinishReason: resp.FinishReason}
	if err != nil {
		p.Error, p.ErrorKind = err.Error(), fault.KindOf(err).String()
	}
	publishCall(ctx, c, event.SubjectModelCall(c.Run.ID, event.Actor(c.Run.AgentID, c.Node)), start, time.Now(), p)
}

// publishToolCalls publishes each call of a tool batch that ran from
// start: the calls of a batch share its start and end; a result marked
// as an error is the call's error. A batch that failed as a whole
// publishes each call with the batch's error.
func publishToolCalls(ctx context.Context, c *Call, start time.Time, calls []message.ToolCall, results []message.ToolResult, batchErr error) {
	end := time.Now()
	subject := event.SubjectToolCall(c.Run.ID, event.Actor(c.Run.AgentID, c.Node))
	for i, call := range calls {
		p := event.CallPayload{Name: call.Name, ToolCallID: call.ID}
		switch {
		case batchErr != nil:
			p.Error, p.ErrorKind = batchErr.Error(), fault.KindOr(batchErr, fault.Internal).String()
		case i < len(results) && results[i].IsError:
			p.Error = "the tool's result is an error" // its content stays in the run's messages
		}
		publishCall(ctx, c, subject, start, end, p)
	}
}
