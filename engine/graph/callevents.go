package graph

import (
	"context"
	"maps"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
)

// ProviderNamer is implemented by a model.Provider that tells its name
// ("openai"): the call events of an inference node name it as the
// provider, else they name the engine's dependency role that bound it.
type ProviderNamer interface {
	ProviderName() string
}

// publishRunStartEnvelope publishes run start with the run's headers and
// the run's tenant and context id (event.HeaderTenant,
// event.HeaderContextID), for observers that follow turns (REF 4.4.4).
func (r *runState) publishRunStartEnvelope(ctx context.Context) error {
	env, err := event.NewEnvelope(ctx, event.SubjectRunStart(r.run.ID), r.e.runPayload)
	if err != nil {
		return err
	}
	h := r.cache.headers.get(r, "")
	if r.run.Tenant != "" || r.run.ContextID != "" {
		m := make(map[string]string, len(h)+2)
		maps.Copy(m, h)
		if r.run.Tenant != "" {
			m[event.HeaderTenant] = r.run.Tenant
		}
		if r.run.ContextID != "" {
			m[event.HeaderContextID] = r.run.ContextID
		}
		h = m
	}
	env.Headers = h
	return r.host.Publish(ctx, env)
}

// publishCall publishes one ended call of c's node on subject; a failure
// is only logged (REF 4.4.5).
func publishCall(ctx context.Context, c *Call, subject string, p event.CallPayload) {
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
		env.Headers = map[string]string{event.HeaderRunID: c.Run.ID, event.HeaderAgentID: c.Run.AgentID,
			event.HeaderNodeID: c.Node}
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
	p := event.CallPayload{Name: h.model, Provider: provider, Start: start, End: time.Now(),
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, TotalTokens: resp.Usage.TotalTokens,
		FinishReason: resp.FinishReason}
	if err != nil {
		p.Error, p.ErrorKind = err.Error(), fault.KindOf(err).String()
	}
	publishCall(ctx, c, event.SubjectModelCall(c.Run.ID, event.Actor(c.Run.AgentID, c.Node)), p)
}

// publishToolCalls publishes each call of a tool batch that ran from
// start: the calls of a batch share its start and end; a result marked
// as an error is the call's error. A batch that failed as a whole
// publishes each call with the batch's error.
func publishToolCalls(ctx context.Context, c *Call, start time.Time, calls []message.ToolCall, results []message.ToolResult, batchErr error) {
	end := time.Now()
	subject := event.SubjectToolCall(c.Run.ID, event.Actor(c.Run.AgentID, c.Node))
	for i, call := range calls {
		p := event.CallPayload{Name: call.Name, ToolCallID: call.ID, Start: start, End: end}
		switch {
		case batchErr != nil:
			p.Error, p.ErrorKind = batchErr.Error(), fault.KindOr(batchErr, fault.Internal).String()
		case i < len(results) && results[i].IsError:
			p.Error = "the tool's result is an error" // its content stays in the run's messages
		}
		publishCall(ctx, c, subject, p)
	}
}
