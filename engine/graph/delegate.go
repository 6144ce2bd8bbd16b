package graph

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/delegation"
)

// DelegateTypeName is the name of the built-in delegate node type.
const DelegateTypeName = "delegate"

// DelegateConfig is the config of a delegate node: it runs another agent
// through the run host's delegation service, exactly as a script's
// host.delegate(agent, message, options) does, so the document must grant
// "delegate" or "delegate:<agent>" and the result is journaled. String
// values may hold ${board...} references.
type DelegateConfig struct {
	// Agent is the target agent id. Required.
	Agent string `json:"agent"`
	// Message is the text of the user message the target starts with.
	// Exactly one of Message and MessageChannel is set.
	Message *string `json:"message,omitempty"`
	// MessageChannel names a board channel whose last message the target
	// starts with; the channel must not be empty.
	MessageChannel string `json:"message_channel,omitempty"`
	// Inputs become the target board's vars.
	Inputs map[string]any `json:"inputs,omitempty"`
	// IdempotencyKey makes a retried node replay the first delegation.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// OutputKey is the var that receives the text of the target's output.
	OutputKey string `json:"output_key,omitempty"`
	// OutputChannel is the channel the target's output messages are
	// appended to.
	OutputChannel string `json:"output_channel,omitempty"`
	// ResultKey is the var that receives the whole result object (id,
	// target, status, run_id, output, text, error).
	ResultKey string `json:"result_key,omitempty"`
	// AllowFailure keeps the run going when the delegated run failed or was
	// canceled: the result is written and the node succeeds. By default
	// such a run fails the node with the delegation's error.
	AllowFailure bool `json:"allow_failure,omitempty"`
}

// check validates the shape of a config.
func (c DelegateConfig) check() error {
	switch {
	case strings.TrimSpace(c.Agent) == "":
		return fault.New(fault.Validation, "", "agent: the target agent is required")
	case (c.Message != nil) == (c.MessageChannel != ""):
		return fault.New(fault.Validation, "", "message: exactly one of message and message_channel is required")
	}
	return nil
}

// DelegateType returns the delegate node type (DelegateConfig).
func DelegateType() NodeType { return delegateType{} }

type delegateType struct{}

func (delegateType) Name() string { return DelegateTypeName }

func (delegateType) Build(_ context.Context, in NodeInput) (Handler, error) {
	var c DelegateConfig
	if err := DecodeConfig(in.Node.Config, &c); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return delegateHandler{}, nil
}

type delegateHandler struct{}

var _ Handler = delegateHandler{}

// Run delegates once and writes the result to the board.
func (delegateHandler) Run(ctx context.Context, c *Call) error {
	cfg, err := delegateConfig(c)
	if err != nil {
		return err
	}
	args, err := delegateArgs(c, cfg)
	if err != nil {
		return err
	}
	abi := c.ABI()
	if abi == nil {
		return fault.New(fault.NotAvailable, "delegate", "node %q: no host abi for this call", c.Node)
	}
	raw, err := abi.Call(ctx, hostabi.FuncDelegate, args)
	if err != nil {
		return err
	}
	var res hostabi.DelegateResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fault.Wrap(fault.Internal, err, "delegate", "node %q: decode the result", c.Node)
	}
	if err := writeDelegateResult(c, cfg, res, raw); err != nil {
		return err
	}
	if res.Status == delegation.StatusSucceeded || cfg.AllowFailure {
		return nil
	}
	return delegateFailure(c.Node, res)
}

// delegateConfig decodes the resolved config of the call.
func delegateConfig(c *Call) (DelegateConfig, error) {
	var cfg DelegateConfig
	raw, err := json.Marshal(c.Config)
	if err == nil {
		err = DecodeConfig(raw, &cfg)
	}
	if err == nil {
		err = cfg.check()
	}
	if err != nil {
		return cfg, fault.Wrap(fault.Validation, err, "delegate", "node %q: config", c.Node)
	}
	return cfg, nil
}

// delegateArgs builds host.delegate's argument array.
func delegateArgs(c *Call, cfg DelegateConfig) (json.RawMessage, error) {
	var msg any
	if cfg.Message != nil {
		msg = *cfg.Message
	} else {
		ch := c.Board.Channel(cfg.MessageChannel)
		if len(ch) == 0 {
			return nil, fault.New(fault.Validation, "delegate", "node %q: message_channel %q is empty", c.Node, cfg.MessageChannel)
		}
		msg = ch[len(ch)-1]
	}
	opts := map[string]any{}
	if cfg.Inputs != nil {
		opts["inputs"] = cfg.Inputs
	}
	if cfg.IdempotencyKey != "" {
		opts["idempotency_key"] = cfg.IdempotencyKey
	}
	b, err := json.Marshal([]any{cfg.Agent, msg, opts})
	if err != nil {
		return nil, fault.Wrap(fault.Validation, err, "delegate", "node %q: encode the arguments", c.Node)
	}
	return b, nil
}

// writeDelegateResult writes the output text, messages and result object.
func writeDelegateResult(c *Call, cfg DelegateConfig, res hostabi.DelegateResult, raw json.RawMessage) error {
	if cfg.OutputKey != "" {
		c.Board.Vars[cfg.OutputKey] = res.Text
	}
	if cfg.OutputChannel != "" && len(res.Output) > 0 {
		c.Board.Append(cfg.OutputChannel, res.Output...)
	}
	if cfg.ResultKey != "" {
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			return fault.Wrap(fault.Internal, err, "delegate", "node %q: decode the result", c.Node)
		}
		c.Board.Vars[cfg.ResultKey] = v
	}
	return nil
}

// delegateFailure is the node's error for a run that did not succeed: the
// delegation's error, with its kind (Aborted for a canceled run without
// one).
func delegateFailure(node string, res hostabi.DelegateResult) error {
	if res.Error == nil {
		return fault.New(fault.Aborted, "delegate", "node %q: agent %q: delegation %s ended %s", node, res.Target, res.ID, res.Status)
	}
	return fault.Wrap(fault.KindOr(res.Error.Err(), fault.Internal), res.Error.Err(), "delegate",
		"node %q: agent %q: delegation %s %s", node, res.Target, res.ID, res.Status)
}
