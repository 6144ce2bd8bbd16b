package event

import "strings"

// SubjectPrefixRun starts every subject of a run.
const SubjectPrefixRun = "agent.run."

// The prefixes of the runtime's own subjects.
const (
	subjectPrefixAgent   = "runtime.agent."
	subjectPrefixRebuild = "runtime.rebuild."
)

// Actor returns the one-segment actor of a graph step:
// SanitiseID(agentID + ".node." + nodeID), so "bot" and "n1" give
// "bot_node_n1". Filter by agent with the agent_id header, not a wildcard.
func Actor(agentID, nodeID string) string {
	return SanitiseID(agentID + ".node." + nodeID)
}

func runSubject(run string, rest ...string) string {
	var b strings.Builder
	b.WriteString(SubjectPrefixRun)
	b.WriteString(SanitiseID(run))
	for _, r := range rest {
		b.WriteByte('.')
		b.WriteString(r)
	}
	return b.String()
}

// SubjectRunStart is agent.run.<run>.start.
func SubjectRunStart(run string) string { return runSubject(run, "start") }

// SubjectRunEnd is agent.run.<run>.end.
func SubjectRunEnd(run string) string { return runSubject(run, "end") }

// SubjectStepStart is agent.run.<run>.step.<actor>.start.
func SubjectStepStart(run, actor string) string {
	return runSubject(run, "step", SanitiseID(actor), "start")
}

// SubjectStepComplete is agent.run.<run>.step.<actor>.complete; a skipped
// node publishes it with skipped set.
func SubjectStepComplete(run, actor string) string {
	return runSubject(run, "step", SanitiseID(actor), "complete")
}

// SubjectStepError is agent.run.<run>.step.<actor>.error.
func SubjectStepError(run, actor string) string {
	return runSubject(run, "step", SanitiseID(actor), "error")
}

// SubjectStreamDelta is agent.run.<run>.stream.<actor>.delta.
func SubjectStreamDelta(run, actor string) string {
	return runSubject(run, "stream", SanitiseID(actor), "delta")
}

// SubjectParallelFork is agent.run.<run>.parallel.fork.
func SubjectParallelFork(run string) string { return runSubject(run, "parallel", "fork") }

// SubjectParallelJoin is agent.run.<run>.parallel.join.
func SubjectParallelJoin(run string) string { return runSubject(run, "parallel", "join") }

// SubjectPromptRequested is agent.run.<run>.prompt.requested.
func SubjectPromptRequested(run string) string { return runSubject(run, "prompt", "requested") }

// SubjectPromptResolved is agent.run.<run>.prompt.resolved.
func SubjectPromptResolved(run string) string { return runSubject(run, "prompt", "resolved") }

// SubjectAgentRegistered is runtime.agent.<id>.registered.
func SubjectAgentRegistered(id string) string {
	return subjectPrefixAgent + SanitiseID(id) + ".registered"
}

// SubjectAgentRemoved is runtime.agent.<id>.removed.
func SubjectAgentRemoved(id string) string {
	return subjectPrefixAgent + SanitiseID(id) + ".removed"
}

// SubjectRebuildStarted is runtime.rebuild.started.
func SubjectRebuildStarted() string { return subjectPrefixRebuild + "started" }

// SubjectRebuildCompleted is runtime.rebuild.completed.
func SubjectRebuildCompleted() string { return subjectPrefixRebuild + "completed" }

// SubjectRebuildFailed is runtime.rebuild.failed.
func SubjectRebuildFailed() string { return subjectPrefixRebuild + "failed" }

// PatternRun is agent.run.<run>.>: every event of one run.
func PatternRun(run string) string { return runSubject(run, WildcardTail) }

// PatternAllRuns is agent.run.>: every event of every run.
func PatternAllRuns() string { return SubjectPrefixRun + WildcardTail }

// PatternRunSteps is agent.run.<run>.step.>: the step events of one run.
func PatternRunSteps(run string) string { return runSubject(run, "step", WildcardTail) }

// PatternRunStream is agent.run.<run>.stream.>: the stream deltas of one
// run.
func PatternRunStream(run string) string { return runSubject(run, "stream", WildcardTail) }

// PatternAgentLifecycle is runtime.agent.>: dynamic registry events.
func PatternAgentLifecycle() string { return subjectPrefixAgent + WildcardTail }

// PatternRuntimeRebuild is runtime.rebuild.>: reload events.
func PatternRuntimeRebuild() string { return subjectPrefixRebuild + WildcardTail }

// IsStreamDelta reports whether subject has the shape
// agent.run.<run>.stream.<actor>.delta. It looks at the string only and
// allocates nothing.
func IsStreamDelta(subject string) bool {
	rest, ok := strings.CutPrefix(subject, SubjectPrefixRun)
	if !ok {
		return false
	}
	rest, ok = strings.CutSuffix(rest, ".delta")
	if !ok {
		return false
	}
	run, rest, ok := strings.Cut(rest, ".stream.")
	return ok && validSegment(run) && strings.IndexByte(run, '.') < 0 &&
		validSegment(rest) && strings.IndexByte(rest, '.') < 0
}

// RunPayload is the payload of run start and run end. Error, ErrorKind
// (the fault kind name of the error, when it has one) and RequestID are
// set on run end only.
type RunPayload struct {
	Graph     string `json:"graph"`
	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"error_kind,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// StepPayload is the payload of the step subjects.
type StepPayload struct {
	NodeID    string `json:"node_id"`
	Graph     string `json:"graph"`
	Skipped   bool   `json:"skipped,omitempty"`
	Error     string `json:"error,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

// ParallelPayload is the payload of parallel fork and join.
type ParallelPayload struct {
	ForkID    string   `json:"fork_id"`
	Branches  []string `json:"branches"`
	Cancelled []string `json:"cancelled,omitempty"`
	Graph     string   `json:"graph"`
}

// AgentLifecyclePayload is the payload of runtime.agent.<id>.registered and
// .removed: the agent id and what its card says.
type AgentLifecyclePayload struct {
	AgentID     string `json:"agent_id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// RebuildPayload is the payload of the runtime.rebuild subjects. Started
// carries GenerationID only; failed adds Error; completed adds
// PreviousGenerationID and the sorted ReboundAgents and DrainedAgents.
type RebuildPayload struct {
	GenerationID         uint64   `json:"generation_id"`
	PreviousGenerationID uint64   `json:"previous_generation_id,omitempty"`
	ReboundAgents        []string `json:"rebound_agents,omitempty"`
	DrainedAgents        []string `json:"drained_agents,omitempty"`
	Error                string   `json:"error,omitempty"`
}
