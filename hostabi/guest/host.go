package guest

import (
	"encoding/json"
	"time"
)

// Catalog function names (the host module's imports).
const (
	FuncAskUser        = "askUser"
	FuncCheckInterrupt = "checkInterrupt"
	FuncDelegate       = "delegate"
	FuncDrainSteer     = "drainSteer"
	FuncEmit           = "emit"
	FuncLog            = "log"
	FuncNow            = "now"
	FuncPublish        = "publish"
	FuncRandom         = "random"
	FuncReportUsage    = "reportUsage"
)

// Now reads the host's clock (host.now).
func Now() (time.Time, error) {
	var v struct {
		UnixMS int64 `json:"unix_ms"`
	}
	res, err := Call(FuncNow)
	if err := into(res, err, &v); err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(v.UnixMS).UTC(), nil
}

// Random reads the host's random source: a number in [0, 1) (host.random).
func Random() (float64, error) {
	var f float64
	res, err := Call(FuncRandom)
	return f, into(res, err, &f)
}

// Emit sends a stream delta of type typ (host.emit); see docs/hostabi.md
// for the payload of each type.
func Emit(typ string, payload any) error {
	_, err := Call(FuncEmit, typ, payload)
	return err
}

// Publish publishes payload under the run's own custom namespace, at
// agent.run.<run>.custom.<suffix> (host.publish).
func Publish(suffix string, payload any) error {
	_, err := Call(FuncPublish, suffix, payload)
	return err
}

// Log writes a line to the host's log at level debug, info, warn or error
// (host.log); attrs may be nil.
func Log(level, message string, attrs map[string]any) error {
	var err error
	if attrs == nil {
		_, err = Call(FuncLog, level, message)
	} else {
		_, err = Call(FuncLog, level, message, attrs)
	}
	return err
}

// DrainSteer takes the messages steered to the turn, in wire form
// (host.drainSteer); none is an empty slice.
func DrainSteer() ([]json.RawMessage, error) {
	var out []json.RawMessage
	res, err := Call(FuncDrainSteer)
	if err := into(res, err, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []json.RawMessage{}
	}
	return out, nil
}

// Interrupt is an interrupt checkInterrupt saw.
type Interrupt struct {
	Cause  string `json:"cause"`
	Detail string `json:"detail"`
}

// CheckInterrupt polls for an interrupt without blocking
// (host.checkInterrupt); nil when there is none.
func CheckInterrupt() (*Interrupt, error) {
	var out *Interrupt
	res, err := Call(FuncCheckInterrupt)
	return out, into(res, err, &out)
}

// Prompt is a question for the user (host.askUser).
type Prompt struct {
	Parts    []json.RawMessage `json:"parts"`
	Schema   any               `json:"schema,omitempty"`
	Source   string            `json:"source,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Reply is the user's answer.
type Reply struct {
	Parts    []json.RawMessage `json:"parts"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// AskUser asks the user and waits for the reply (host.askUser).
func AskUser(p Prompt) (Reply, error) {
	var out Reply
	res, err := Call(FuncAskUser, p)
	return out, into(res, err, &out)
}

// Usage is token usage.
type Usage struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Total  int64 `json:"total"`
}

// ReportUsage reports token usage (host.reportUsage); a budget_exceeded
// error means the guest must stop spending.
func ReportUsage(u Usage) error {
	_, err := Call(FuncReportUsage, u)
	return err
}

// TextPart returns a text part in wire form, for prompts and messages.
func TextPart(text string) json.RawMessage {
	data, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return data
}

// TextMessage returns a message of role with one text part, in wire form.
func TextMessage(role, text string) json.RawMessage {
	data, _ := json.Marshal(map[string]any{"role": role, "parts": []json.RawMessage{TextPart(text)}})
	return data
}

// DelegateOptions are the optional settings of a delegation.
type DelegateOptions struct {
	Inputs         map[string]any    `json:"inputs,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
}

// DelegateResult is how a delegated run ended. Output holds the run's
// output messages in wire form; Text is their text, one message per line.
type DelegateResult struct {
	ID     string            `json:"id"`
	Target string            `json:"target"`
	Status string            `json:"status"`
	RunID  string            `json:"run_id"`
	Output []json.RawMessage `json:"output"`
	Text   string            `json:"text"`
	Error  *Error            `json:"error,omitempty"`
}

// Delegate runs the agent agentID with a user text message and waits for
// its result (host.delegate). The document must grant delegate, or
// delegate:<agentID>; opts may be nil.
func Delegate(agentID, text string, opts *DelegateOptions) (DelegateResult, error) {
	var out DelegateResult
	var res json.RawMessage
	var err error
	if opts == nil {
		res, err = Call(FuncDelegate, agentID, text)
	} else {
		res, err = Call(FuncDelegate, agentID, text, opts)
	}
	return out, into(res, err, &out)
}
