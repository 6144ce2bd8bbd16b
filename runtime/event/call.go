package event

// HeaderContextID is the header of a run start envelope that names the
// session's context id (the conversation) the run belongs to; the run
// start envelope of the graph engine also carries HeaderTenant.
const HeaderContextID = "context_id"

// HeaderCPUMs is the header of a run end envelope that holds the script
// time the run's script nodes spent, in milliseconds with three decimals:
// the CPU time of a worker process (isolation: process), else the calls'
// durations. A run that spent none leaves it out.
const HeaderCPUMs = "cpu_ms"

// HeaderCallStart is the header of a call event that holds when the call
// started (RFC 3339 with nanoseconds); the envelope's Time is when it
// ended. The times stay out of the payload, so that a replayed run
// publishes the same payloads.
const HeaderCallStart = "call_start"

// SubjectModelCall is agent.run.<run>.call.<actor>.model: one model call
// of a node has ended (CallPayload).
func SubjectModelCall(run, actor string) string {
	return runSubject(run, "call", SanitiseID(actor), "model")
}

// SubjectToolCall is agent.run.<run>.call.<actor>.tool: one tool call of a
// node has ended (CallPayload).
func SubjectToolCall(run, actor string) string {
	return runSubject(run, "call", SanitiseID(actor), "tool")
}

// PatternRunCalls is agent.run.<run>.call.>: the model and tool calls of
// one run.
func PatternRunCalls(run string) string { return runSubject(run, "call", WildcardTail) }

// CallPayload is the payload of the call subjects: one model call or one
// tool call a node made, published when it has ended (the envelope's
// Time; HeaderCallStart says when it started, and the calls of one tool
// batch share the batch's start and end).
type CallPayload struct {
	NodeID string `json:"node_id"`
	Graph  string `json:"graph"`
	// Name is the model a model call asked for, or the tool a tool call
	// ran.
	Name string `json:"name"`
	// Provider is, for a model call, the provider's name: what the
	// provider reports (a ProviderName method), else the engine's
	// dependency role that bound it ("model", "model.<name>").
	Provider   string `json:"provider,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	// InputTokens, OutputTokens and TotalTokens are a model call's usage.
	InputTokens  int64  `json:"input_tokens,omitempty"`
	OutputTokens int64  `json:"output_tokens,omitempty"`
	TotalTokens  int64  `json:"total_tokens,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	// Error is the call's error (a tool call: its result is an error), and
	// ErrorKind its fault kind name ("rate_limit", ...), when it has one.
	Error     string `json:"error,omitempty"`
	ErrorKind string `json:"error_kind,omitempty"`
}
