package hostabi

import (
	"context"
	"encoding/json"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
)

// hostError wraps an error a host returned, keeping its kind (Internal when
// it has none; Timeout or Aborted for a context error).
func (d *Dispatcher) hostError(f string, err error) error {
	err = fault.FromContext(err, "")
	return fault.Wrap(fault.KindOr(err, fault.Internal), err, "host "+f, "node %q", d.cfg.Node)
}

// encodeResult marshals a result; a value that does not encode is an
// Internal error.
func (d *Dispatcher) encodeResult(f string, v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "host "+f, "node %q: encode the result", d.cfg.Node)
	}
	return b, nil
}

// jsonNull and jsonEmptyArray return fresh results: a caller may keep or
// change what Call returns.
func jsonNull() json.RawMessage { return json.RawMessage("null") }

func jsonEmptyArray() json.RawMessage { return json.RawMessage("[]") }

// callDrainSteer takes the turn's queued steer messages. A host without a
// steer source has none (REF 5.4: an empty array, not an error).
func callDrainSteer(_ context.Context, d *Dispatcher, _ []json.RawMessage) (json.RawMessage, error) {
	src, ok := agent.SteerFromHost(d.cfg.Host)
	if !ok {
		return jsonEmptyArray(), nil
	}
	msgs := src.DrainSteer()
	if len(msgs) == 0 {
		return jsonEmptyArray(), nil
	}
	return d.encodeResult(FuncDrainSteer, msgs)
}

// interruptResult is checkInterrupt's answer.
type interruptResult struct {
	Cause  agent.InterruptCause `json:"cause"`
	Detail string               `json:"detail"`
}

// callCheckInterrupt polls the host's interrupts without blocking,
// through the latch that remembers what it saw.
func callCheckInterrupt(_ context.Context, d *Dispatcher, _ []json.RawMessage) (json.RawMessage, error) {
	intr, ok := d.latch.Poll(d.cfg.Host.Interrupts())
	if !ok {
		return jsonNull(), nil
	}
	return d.encodeResult(FuncCheckInterrupt, interruptResult{Cause: intr.Cause, Detail: intr.Detail})
}

// callAskUser asks the user and waits for the reply.
func callAskUser(ctx context.Context, d *Dispatcher, argv []json.RawMessage) (json.RawMessage, error) {
	p, err := d.decodePrompt(argv)
	if err != nil {
		return nil, err
	}
	prompter, _ := agent.CapabilityFromHost[agent.UserPrompter](d.cfg.Host)
	reply, err := prompter.AskUser(ctx, p)
	if err != nil {
		return nil, d.hostError(FuncAskUser, err)
	}
	if reply.Parts == nil {
		reply.Parts = []message.Part{}
	}
	return d.encodeResult(FuncAskUser, reply)
}

// decodePrompt decodes askUser's argument strictly: known fields only, at
// least one part, and parts that are valid message parts.
func (d *Dispatcher) decodePrompt(argv []json.RawMessage) (agent.UserPrompt, error) {
	var p agent.UserPrompt
	if err := d.argObject(FuncAskUser, argv, 0, "prompt", &p); err != nil {
		return agent.UserPrompt{}, err
	}
	if len(p.Parts) == 0 {
		return agent.UserPrompt{}, d.argError(FuncAskUser, 0, nil, "prompt: parts: at least one part is required")
	}
	if err := (message.Message{Role: message.RoleAssistant, Parts: p.Parts}).Validate(); err != nil {
		return agent.UserPrompt{}, d.argError(FuncAskUser, 0, err, "prompt")
	}
	if isNull(p.Schema) {
		p.Schema = nil
	}
	return p, nil
}

// usageArg is reportUsage's argument.
type usageArg struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Total  int64 `json:"total"`
}

// callReportUsage reports token usage. A BudgetExceeded answer reaches the
// script; any other host error is only logged (REF 6.1.1).
func callReportUsage(ctx context.Context, d *Dispatcher, argv []json.RawMessage) (json.RawMessage, error) {
	var u usageArg
	if err := d.argObject(FuncReportUsage, argv, 0, "usage", &u); err != nil {
		return nil, err
	}
	if u.Input < 0 || u.Output < 0 || u.Total < 0 {
		return nil, d.argError(FuncReportUsage, 0, nil, "usage: counts must be >= 0")
	}
	reporter, _ := agent.CapabilityFromHost[agent.UsageReporter](d.cfg.Host)
	err := reporter.ReportUsage(ctx, agent.Usage{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.Total})
	switch {
	case err == nil:
	case fault.Is(err, fault.BudgetExceeded) || ctx.Err() != nil:
		return nil, d.hostError(FuncReportUsage, err)
	default:
		d.logger.WarnContext(ctx, "host reportUsage: the host refused usage", "node", d.cfg.Node, "error", err)
	}
	return jsonNull(), nil
}
