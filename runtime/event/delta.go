package event

import (
	"encoding/json"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
)

// DeltaType says what a stream delta carries. Consumers skip types they do
// not know.
type DeltaType string

// The delta types with rules of their own. Any other non-empty type is a
// custom delta that carries its data in Payload.
const (
	DeltaPart                 DeltaType = "part"                   // needs Part
	DeltaFinish               DeltaType = "finish"                 // needs FinishReason
	DeltaProviderOutputs      DeltaType = "provider_outputs"       // needs ProviderOutputs
	DeltaParallelBranchAccept DeltaType = "parallel_branch_accept" // needs ForkID and BranchID, no Part
	DeltaParallelBranchCancel DeltaType = "parallel_branch_cancel" // needs ForkID and BranchID, no Part
)

// StreamDeltaPayload is the payload of agent.run.<run>.stream.<actor>.delta:
// one increment of a run's output.
type StreamDeltaPayload struct {
	Type            DeltaType        `json:"type"`
	Part            *message.Part    `json:"part,omitempty"`
	Payload         json.RawMessage  `json:"payload,omitempty"` // for custom types
	Speculative     bool             `json:"speculative,omitempty"`
	ForkID          string           `json:"fork_id,omitempty"`
	BranchID        string           `json:"branch_id,omitempty"`
	Reason          string           `json:"reason,omitempty"`
	FinishReason    string           `json:"finish_reason,omitempty"`
	RequestID       string           `json:"request_id,omitempty"`
	ResponseID      string           `json:"response_id,omitempty"`
	ProviderOutputs []ProviderOutput `json:"provider_outputs,omitempty"`
}

// ProviderOutput is a provider-specific output passed through a delta.
type ProviderOutput struct {
	Provider  string          `json:"provider"`
	Extension string          `json:"extension"`
	Value     json.RawMessage `json:"value,omitempty"`
}

// IsControl reports whether t is a parallel branch accept or cancel; every
// other type is a data delta.
func (t DeltaType) IsControl() bool {
	return t == DeltaParallelBranchAccept || t == DeltaParallelBranchCancel
}

// Validate checks the per-type rules: part needs Part, finish needs
// FinishReason, provider_outputs needs a non-empty list, and the parallel
// branch types need ForkID and BranchID and must not carry Part. A
// speculative data delta carries both ForkID and BranchID; a
// non-speculative one carries neither. Custom types are accepted. Problems
// are Validation errors.
func (d StreamDeltaPayload) Validate() error {
	bad := func(format string, args ...any) error {
		return fault.New(fault.Validation, "validate stream delta", format, args...)
	}
	switch d.Type {
	case "":
		return bad("type is required")
	case DeltaPart:
		if d.Part == nil {
			return bad("a %q delta needs part", d.Type)
		}
	case DeltaFinish:
		if d.FinishReason == "" {
			return bad("a %q delta needs finish_reason", d.Type)
		}
	case DeltaProviderOutputs:
		if len(d.ProviderOutputs) == 0 {
			return bad("a %q delta needs provider_outputs", d.Type)
		}
	case DeltaParallelBranchAccept, DeltaParallelBranchCancel:
		if d.ForkID == "" || d.BranchID == "" {
			return bad("a %q delta needs fork_id and branch_id", d.Type)
		}
		if d.Part != nil {
			return bad("a %q delta must not carry part", d.Type)
		}
		return nil
	}
	switch {
	case d.Speculative && (d.ForkID == "" || d.BranchID == ""):
		return bad("a speculative %q delta needs fork_id and branch_id", d.Type)
	case !d.Speculative && (d.ForkID != "" || d.BranchID != ""):
		return bad("a non-speculative %q delta must not carry fork_id or branch_id", d.Type)
	}
	return nil
}
