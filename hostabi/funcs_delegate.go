package hostabi

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/message"
)

// FuncDelegate is the name of the host function that runs another agent.
const FuncDelegate = "delegate"

// delegateOptions is the optional third argument of delegate.
type delegateOptions struct {
	Inputs         map[string]any    `json:"inputs,omitempty"`
	Metadata       map[string]string `json:"metadata,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
}

// DelegateResult is the result of host.delegate(): the delegation's
// response, with the text of its output for convenience.
type DelegateResult struct {
	ID     string                `json:"id"`
	Target string                `json:"target"`
	Status delegation.Status     `json:"status"`
	RunID  string                `json:"run_id"`
	Output []message.Message     `json:"output"` // [] when none
	Text   string                `json:"text"`   // the output's text parts, one message per line
	Error  *delegation.ErrorInfo `json:"error,omitempty"`
}

// hasService reports whether h offers a delegation service.
func hasService(h agent.Host) bool {
	_, ok := delegation.ServiceFromHost(h)
	return ok
}

// callDelegate runs another agent through the host's delegation service,
// synchronously. The document must grant delegate, or delegate:<target>
// for this target; the result is journaled as a non-deterministic input.
func callDelegate(ctx context.Context, d *Dispatcher, argv []json.RawMessage) (json.RawMessage, error) {
	req, err := d.decodeDelegate(argv)
	if err != nil {
		return nil, err
	}
	if err := d.permitTarget(req.Target); err != nil {
		return nil, err
	}
	if intr, ok := d.latch.Poll(d.cfg.Host.Interrupts()); ok {
		// The run is being interrupted: no new sub-run.
		return nil, d.hostError(FuncDelegate, agent.Interrupted(intr))
	}
	svc, _ := delegation.ServiceFromHost(d.cfg.Host)
	dctx, stop := d.watchInterrupt(ctx)
	resp, err := svc.Delegate(agent.ContextWithHost(delegation.WithCaller(dctx, d.cfg.Run.AgentID), d.cfg.Host), req)
	stop()
	if err != nil {
		return nil, d.hostError(FuncDelegate, err)
	}
	return d.encodeResult(FuncDelegate, delegateResult(resp))
}

// watchInterrupt returns a ctx for a delegation that ends, with the
// interrupt as its cause (an *agent.InterruptedError), when the caller's
// run is interrupted while the delegation runs: the delegation service
// then interrupts the sub-run. The interrupt is remembered in the run's
// latch, so the caller's engine stops at its next check as it would have;
// an interrupt the latch got elsewhere (another parallel branch, the
// engine) ends the delegation too. Only a dispatcher given the run's latch
// (Config.Interrupts) watches: one with a latch of its own would take the
// interrupt from the host's channel and keep it from the run.
// stop ends the watch; the watching goroutine has returned when it does.
func (d *Dispatcher) watchInterrupt(ctx context.Context) (_ context.Context, stop func()) {
	ch := d.cfg.Host.Interrupts()
	if ch == nil || d.cfg.Interrupts == nil {
		return ctx, func() {}
	}
	wctx, cancel := context.WithCancelCause(delegation.WithInterruptsWatched(ctx))
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case intr, ok := <-ch:
			if ok {
				d.latch.remember(intr)
				cancel(agent.Interrupted(intr))
			}
		case <-d.latch.Done(): // polled by the engine or another branch
			intr, _ := d.latch.Seen()
			cancel(agent.Interrupted(intr))
		case <-done:
		case <-wctx.Done():
		}
	}()
	return wctx, func() {
		close(done)
		<-exited
		cancel(nil)
	}
}

func delegateResult(resp delegation.Response) DelegateResult {
	out := DelegateResult{ID: resp.ID, Target: resp.Target, Status: resp.Status, RunID: resp.RunID,
		Output: resp.Output, Error: resp.Error}
	if out.Output == nil {
		out.Output = []message.Message{}
	}
	texts := make([]string, 0, len(resp.Output))
	for _, m := range resp.Output {
		if t := m.Text(); t != "" {
			texts = append(texts, t)
		}
	}
	out.Text = strings.Join(texts, "\n")
	return out
}

// decodeDelegate decodes delegate's arguments: [agentId: string, message:
// string | message object, options?: {inputs, metadata, idempotency_key}].
// A string message is a user text message.
func (d *Dispatcher) decodeDelegate(argv []json.RawMessage) (delegation.Request, error) {
	target, err := d.argString(FuncDelegate, argv, 0, "agent id")
	if err != nil {
		return delegation.Request{}, err
	}
	msg, err := d.delegateMessage(argv)
	if err != nil {
		return delegation.Request{}, err
	}
	var opts delegateOptions
	if raw := optArg(argv, 2); !isNull(raw) {
		if err := d.argObject(FuncDelegate, argv, 2, "options", &opts); err != nil {
			return delegation.Request{}, err
		}
	}
	req := delegation.Request{Mode: delegation.ModeSync, Target: target, Input: msg,
		Inputs: opts.Inputs, Metadata: opts.Metadata, IdempotencyKey: opts.IdempotencyKey}
	if err := req.Validate(); err != nil {
		return delegation.Request{}, d.argError(FuncDelegate, 0, err, "request")
	}
	return req, nil
}

// delegateMessage decodes argument 1: a string or a message object.
func (d *Dispatcher) delegateMessage(argv []json.RawMessage) (message.Message, error) {
	raw := argv[1]
	if isNull(raw) {
		return message.Message{}, d.argError(FuncDelegate, 1, nil, "message: want a string or a message object, got null")
	}
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return message.NewTextMessage(message.RoleUser, text), nil
	}
	m, err := message.Decode(raw)
	if err != nil {
		return message.Message{}, d.argError(FuncDelegate, 1, err, "message: want a string or a message object")
	}
	return m, nil
}
