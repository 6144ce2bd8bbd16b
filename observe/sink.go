package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
)

// errClosed ends the attachment of a closed observer.
var errClosed = fault.New(fault.NotAvailable, "observe", "the observer is closed")

// runTrack is what the observer keeps of one open run.
type runTrack struct {
	id, tenant, agent string // tenant and agent as labels (bounded)
	start             time.Time
	span              trace.Span
	ctx               context.Context // carries span, the parent of the run's call spans
	input, output     int64
}

// abandon ends the span of a run whose end the observer will not see.
func (r *runTrack) abandon(why string) {
	r.span.SetAttributes(attrObserverClosed(why))
	r.span.End()
}

// onEvent is the attachment's sink: it reads the run start, run end and
// call events and skips the rest (REF 13.2).
func (o *Observer) onEvent(_ context.Context, env event.Envelope) error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return errClosed
	}
	o.inflight.Add(1)
	o.mu.Unlock()
	defer o.inflight.Done()
	rest, ok := strings.CutPrefix(env.Subject, event.SubjectPrefixRun)
	if !ok {
		return nil
	}
	switch runEventKind(rest) {
	case "start":
		o.runStarted(env)
	case "end":
		o.runEnded(env)
	case "model":
		o.modelCall(env)
	case "tool":
		o.toolCall(env)
	}
	return nil
}

// runEventKind is what the observer reads of a run's subject (after
// agent.run.): "start" and "end" for <run>.start and <run>.end, "model"
// and "tool" for <run>.call.<actor>.model and .tool, "" for anything
// else. The second segment must be "call" itself: a script's custom
// events (<run>.custom.call.model, published with host.publish) are not
// the engine's calls and count no tokens.
func runEventKind(rest string) string {
	_, tail, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	switch tail {
	case "start", "end":
		return tail
	}
	call, ok := strings.CutPrefix(tail, "call.")
	if !ok {
		return ""
	}
	actor, kind, ok := strings.Cut(call, ".")
	if !ok || actor == "" || strings.Contains(kind, ".") || (kind != "model" && kind != "tool") {
		return ""
	}
	return kind
}

// tenantOf is the run's tenant: the run start's header, else the agent's
// definition, else the default tenant.
func (o *Observer) tenantOf(env event.Envelope) string {
	if t := env.Header(event.HeaderTenant); t != "" {
		return t
	}
	if a, ok := o.app.Agent(env.Header(event.HeaderAgentID)); ok {
		return a.Definition.TenantID()
	}
	return "default"
}

func (o *Observer) runStarted(env event.Envelope) {
	runID, agentID := env.Header(event.HeaderRunID), env.Header(event.HeaderAgentID)
	if runID == "" {
		return
	}
	tenant, agentLabel := o.tenants.value(o.tenantOf(env)), o.agents.value(agentID)
	o.m.started.WithLabelValues(tenant, agentLabel).Inc()
	o.m.running.WithLabelValues(tenant).Inc()
	parent := o.parentContext(env)
	name, engine := agentID, ""
	if a, ok := o.app.Agent(agentID); ok {
		if a.Definition.Card.Name != "" {
			name = a.Definition.Card.Name
		}
		engine = a.Definition.Engine.Impl
	}
	_, span := o.tracer.Start(parent, clip("invoke_agent "+name), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(env.Time), trace.WithAttributes(runAttrs(env, name, engine)...))
	r := &runTrack{id: runID, tenant: tenant, agent: agentLabel, start: env.Time, span: span}
	r.ctx = trace.ContextWithSpan(context.Background(), span)
	o.mu.Lock()
	defer o.mu.Unlock()
	if old := o.runs[runID]; old != nil { // started again without an end the observer saw
		o.m.running.WithLabelValues(old.tenant).Dec()
		old.abandon("run started again")
	}
	o.runs[runID] = r
	o.order = append(o.order, runID)
	o.evictLocked()
}

// parentContext is the parent of a run's span: the span of the run that
// delegated it, else the trace its run start envelope names (the span of
// the engine's ctx, event.ContextWithSpan), else none.
func (o *Observer) parentContext(env event.Envelope) context.Context {
	if p := env.Header(event.HeaderParentRunID); p != "" {
		o.mu.Lock()
		parent := o.runs[p]
		o.mu.Unlock()
		if parent != nil {
			return parent.ctx
		}
	}
	tid, err1 := trace.TraceIDFromHex(env.TraceID)
	sid, err2 := trace.SpanIDFromHex(env.SpanID)
	if err1 == nil && err2 == nil {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
		return trace.ContextWithRemoteSpanContext(context.Background(), sc)
	}
	return context.Background()
}

// evictLocked ends the oldest open runs past maxRuns; o.mu is held.
func (o *Observer) evictLocked() {
	for len(o.runs) > o.maxRuns && len(o.order) > 0 {
		id := o.order[0]
		o.order = o.order[1:]
		if r, ok := o.runs[id]; ok {
			delete(o.runs, id)
			o.m.running.WithLabelValues(r.tenant).Dec()
			r.abandon("too many open runs")
			o.log.Warn("observe: too many open runs, the oldest is no longer followed", "run_id", id)
		}
	}
	if len(o.order) > 2*o.maxRuns { // ids of runs that ended
		kept := o.order[:0]
		for _, id := range o.order {
			if _, ok := o.runs[id]; ok {
				kept = append(kept, id)
			}
		}
		o.order = kept
	}
}

func (o *Observer) take(runID string) *runTrack {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.runs[runID]
	delete(o.runs, runID)
	return r
}

func (o *Observer) peek(runID string) *runTrack {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.runs[runID]
}

func (o *Observer) runEnded(env event.Envelope) {
	var p event.RunPayload
	if bytes.Contains(env.Payload, []byte(`"error"`)) { // a run without an error needs no decoding
		_ = json.Unmarshal(env.Payload, &p)
	}
	status := statusOf(p.Error, p.ErrorKind)
	quota := ""
	if p.ErrorKind == fault.RateLimit.String() || p.ErrorKind == fault.BudgetExceeded.String() {
		quota = quotaOf(p.Error) // the text of a quota's error; a script may throw the same text
	}
	r := o.take(env.Header(event.HeaderRunID))
	tenant, agentLabel := "", o.agents.value(env.Header(event.HeaderAgentID))
	if r != nil {
		tenant = r.tenant
	} else {
		tenant = o.tenants.value(o.tenantOf(env))
	}
	o.m.ended.WithLabelValues(tenant, agentLabel, status).Inc()
	cpuMs, cpuErr := strconv.ParseFloat(env.Header(event.HeaderCPUMs), 64)
	if cpuErr == nil && cpuMs > 0 {
		o.m.cpu.WithLabelValues(tenant).Add(cpuMs / 1000)
	}
	if quota != "" {
		o.m.quota.WithLabelValues(tenant, quotaLabel(quota)).Inc()
	}
	if r == nil {
		return // started before the observer, or evicted
	}
	o.m.running.WithLabelValues(tenant).Dec()
	d := env.Time.Sub(r.start)
	o.m.duration.WithLabelValues(tenant, agentLabel).Observe(d.Seconds())
	r.span.SetAttributes(endAttrs(r, status, quota)...)
	if cpuErr == nil {
		r.span.SetAttributes(KeyCPUMs.Float64(cpuMs))
	}
	if p.Error != "" {
		r.span.SetAttributes(attrErrorType(errorType(p.ErrorKind)))
		r.span.SetStatus(codes.Error, clip(p.Error))
	}
	r.span.End(trace.WithTimestamp(env.Time))
	o.log.Debug("observe: turn ended", "run_id", r.id, "agent", env.Header(event.HeaderAgentID), "tenant", tenant,
		"status", status, "duration", d)
}

func (o *Observer) modelCall(env event.Envelope) {
	var p event.CallPayload
	if json.Unmarshal(env.Payload, &p) != nil {
		return
	}
	r := o.peek(env.Header(event.HeaderRunID))
	parent, tenant := context.Background(), ""
	if r != nil {
		parent, tenant = r.ctx, r.tenant
		o.mu.Lock()
		r.input += p.InputTokens
		r.output += p.OutputTokens
		o.mu.Unlock()
	} else {
		tenant = o.tenants.value(o.tenantOf(env))
	}
	if p.InputTokens > 0 {
		o.m.tokens.WithLabelValues(tenant, "input").Add(float64(p.InputTokens))
	}
	if p.OutputTokens > 0 {
		o.m.tokens.WithLabelValues(tenant, "output").Add(float64(p.OutputTokens))
	}
	o.m.models.WithLabelValues(tenant, callStatus(p)).Inc()
	_, span := o.tracer.Start(parent, clip("chat "+p.Name), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(callStart(env)), trace.WithAttributes(modelAttrs(p)...))
	endCall(span, env, p)
}

func (o *Observer) toolCall(env event.Envelope) {
	var p event.CallPayload
	if json.Unmarshal(env.Payload, &p) != nil {
		return
	}
	r := o.peek(env.Header(event.HeaderRunID))
	parent, tenant := context.Background(), ""
	if r != nil {
		parent, tenant = r.ctx, r.tenant
	} else {
		tenant = o.tenants.value(o.tenantOf(env))
	}
	o.m.tools.WithLabelValues(tenant, callStatus(p)).Inc()
	_, span := o.tracer.Start(parent, clip("execute_tool "+p.Name), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(callStart(env)), trace.WithAttributes(toolAttrs(p)...))
	endCall(span, env, p)
}

func endCall(span trace.Span, env event.Envelope, p event.CallPayload) {
	if p.Error != "" {
		span.SetAttributes(attrErrorType(callErrorType(p)))
		span.SetStatus(codes.Error, clip(p.Error))
	}
	span.End(trace.WithTimestamp(env.Time))
}

// callStart is when a call started (event.HeaderCallStart), else when it
// ended.
func callStart(env event.Envelope) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, env.Header(event.HeaderCallStart)); err == nil {
		return t
	}
	return env.Time
}

// statusOf is a run's status label: completed, or its error's kind, or
// failed for an error without one.
func statusOf(errText, kind string) string {
	switch {
	case errText == "":
		return "completed"
	case kind != "":
		if _, ok := fault.ParseKind(kind); ok {
			return kind
		}
		return OtherLabel
	}
	return "failed"
}

// callStatus is a call's status label: ok, the error's kind, or error.
func callStatus(p event.CallPayload) string {
	if p.Error == "" {
		return "ok"
	}
	if _, ok := fault.ParseKind(p.ErrorKind); ok {
		return p.ErrorKind
	}
	return "error"
}

// errorType is error.type: a fault kind's name, or "_OTHER" for none or
// a kind Corral does not define.
func errorType(kind string) string {
	if _, ok := fault.ParseKind(kind); !ok {
		return "_OTHER"
	}
	return kind
}

func callErrorType(p event.CallPayload) string {
	if p.ErrorKind == "" && p.ToolCallID != "" {
		return "tool_error"
	}
	return errorType(p.ErrorKind)
}

// quotaPattern finds the quota a *session.QuotaError names in a run's
// error text: `tenant "acme": quota concurrent_turns of 8 reached`.
var quotaPattern = regexp.MustCompile(`: quota ([a-z_]+) of -?[0-9]+ reached`)

func quotaOf(errText string) string {
	if m := quotaPattern.FindStringSubmatch(errText); m != nil {
		return m[1]
	}
	return ""
}

// ContextWithTrace returns ctx carrying the OpenTelemetry span of ctx as
// the runtime's event span (event.ContextWithSpan): the events of a turn
// started with it name that span, and the turn's invoke_agent span is its
// child (REF 13.2.6). Without a valid span, ctx is returned as it is.
func ContextWithTrace(ctx context.Context) context.Context {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ctx
	}
	return event.ContextWithSpan(ctx, sc.TraceID().String(), sc.SpanID().String())
}
