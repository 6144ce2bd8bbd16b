package model

import (
	"context"
	"encoding/json"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/tool"
)

// Kind is the resource kind of model providers.
const Kind = "model.Provider"

// Finish reasons of a Response.
const (
	FinishStop          = "stop"
	FinishToolCalls     = "tool_calls"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// Tool choices a Request may carry besides the name of one tool.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceNone     = "none"
	ToolChoiceRequired = "required"
)

// Request is one generation.
type Request struct {
	// Model is the model name; empty means the provider's default.
	Model string
	// System is the system prompt; empty means none.
	System string
	// Messages is the conversation, oldest first.
	Messages []message.Message
	// Tools are the tools the model may call.
	Tools []tool.Definition
	// ToolChoice is "", auto, none, required, or the name of one tool.
	ToolChoice string
	// Profile names one of the provider's profiles (its credentials and
	// endpoint); empty means the provider's own. A provider without that
	// profile refuses the request with a Validation error naming it.
	Profile string
	// Intent is what the reply should hold; the zero Intent means text
	// only, as TextOnly does.
	Intent Intent
	// Extensions are provider-specific request fields; a provider applies
	// the ones whose Provider is its own id and ignores the others.
	Extensions []Extension
}

// Intent says which modalities a reply should hold (REF 5.3.1).
type Intent struct {
	Text  bool `json:"text,omitempty"`
	Image bool `json:"image,omitempty"`
	Audio bool `json:"audio,omitempty"`
	Video bool `json:"video,omitempty"`
}

// TextOnly is the default intent.
var TextOnly = Intent{Text: true}

// IsTextOnly reports whether i asks for text only (or, being zero, for
// the default).
func (i Intent) IsTextOnly() bool { return i == TextOnly || i == Intent{} }

// Modalities lists what i asks for, in the order text, image, audio, video.
func (i Intent) Modalities() []string {
	var out []string
	for _, m := range []struct {
		on   bool
		name string
	}{{i.Text, "text"}, {i.Image, "image"}, {i.Audio, "audio"}, {i.Video, "video"}} {
		if m.on {
			out = append(out, m.name)
		}
	}
	return out
}

// Extension is one provider-specific part of a request.
type Extension struct {
	// Provider is the id of the provider the extension is for.
	Provider string `json:"provider"`
	// ID names the extension, for messages.
	ID string `json:"id"`
	// Fields is a JSON object the provider merges into its request.
	Fields json.RawMessage `json:"fields"`
}

// Delta is one streamed piece of a reply. Exactly one field is set.
type Delta struct {
	// Text is a piece of the reply's text.
	Text string
	// ToolCall is a tool call the provider finished assembling.
	ToolCall *message.ToolCall
}

// Response is a finished reply.
type Response struct {
	// Message is the assistant message: its text and tool calls.
	Message message.Message
	// FinishReason is one of the Finish constants.
	FinishReason string
	// Usage is what the call spent.
	Usage agent.Usage
}

// Provider generates replies. It is safe for concurrent use.
type Provider interface {
	// Generate runs one generation. When onDelta is not nil the reply is
	// streamed: onDelta receives each piece as it arrives, and an error
	// from it ends the call with that error. The Response is the whole
	// reply either way. Errors carry a fault kind (RateLimit, Timeout,
	// NotAvailable, Forbidden, Validation, Aborted, Internal); with an
	// error, the Response holds what arrived before the failure (the
	// streamed text, the finished tool calls, the last usage), if any.
	Generate(ctx context.Context, req Request, onDelta func(Delta) error) (Response, error)
}

// ProfileChecker is implemented by providers that can tell before any call
// whether they serve a profile; an inference node checks its profile with
// it when it is built, and otherwise at the call.
type ProfileChecker interface {
	// CheckProfile returns nil when the provider serves profile, and a
	// Validation error naming it otherwise. The empty profile is always
	// served.
	CheckProfile(profile string) error
}

// IntentChecker is implemented by providers that can tell before any call
// whether they produce what an intent asks; an inference node checks its
// intent with it when it is built.
type IntentChecker interface {
	// CheckIntent returns nil when the provider can produce every
	// modality of i, and a Validation error naming the first it cannot
	// otherwise.
	CheckIntent(i Intent) error
}

// CheckTextOnly is the CheckIntent of providers that produce text only:
// a Validation error naming the first other modality of i.
func CheckTextOnly(op string, i Intent) error {
	for _, m := range i.Modalities() {
		if m != "text" {
			return fault.New(fault.Validation, op, "intent %s: the provider produces text only", m)
		}
	}
	return nil
}
