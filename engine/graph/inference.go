package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/tool"
)

// InferenceTypeName is the name of the built-in inference node type.
const InferenceTypeName = "inference"

// ModelDep is the engine dependency role of model providers: the bare
// "model" binds the default provider, "model.<name>" the provider an
// inference node names with model.provider.
const ModelDep = "model"

// DefaultToolPendingKey is the board var an inference node sets to whether
// the reply asks for tools, unless tool_pending_key says otherwise.
const DefaultToolPendingKey = "tool_pending"

// InferenceConfig is the config of an inference node (REF 5.3.1).
type InferenceConfig struct {
	// Model picks the provider and the model: {id: {provider, name},
	// profile} (REF 5.3.1), {provider, name, profile}, or a string,
	// the model name of the default provider. provider names the engine
	// dep model.<provider>; empty means the bare model dep (or the only
	// model.* dep). name empty means the provider's default model. profile
	// names one of the provider's profiles.
	Model json.RawMessage `json:"model,omitempty"`
	// MessagesChannel is the conversation; default the main channel.
	MessagesChannel string `json:"messages_channel,omitempty"`
	// SystemPrompt is a string (${board} references are resolved) or
	// {file}/{embed}.
	SystemPrompt json.RawMessage `json:"system_prompt,omitempty"`
	// OutputKey, when set, is the board var that gets the reply's text.
	OutputKey string `json:"output_key,omitempty"`
	// UsageKey, when set, is the board var that gets the call's usage
	// ({input, output, total}).
	UsageKey string `json:"usage_key,omitempty"`
	// ToolPendingKey is the board var set to whether the reply finished
	// with tool calls; default "tool_pending".
	ToolPendingKey string `json:"tool_pending_key,omitempty"`
	// Stream publishes the reply's text (and tool calls) as stream deltas
	// while it arrives.
	Stream bool `json:"stream,omitempty"`
	// Tools names the tools of the engine's tool assembly (dep "tools")
	// the model may call; AllTools offers all of them.
	Tools    []string `json:"tools,omitempty"`
	AllTools bool     `json:"all_tools,omitempty"`
	// ToolChoice is auto, none, required or the name of an offered tool;
	// empty leaves it to the provider.
	ToolChoice string `json:"tool_choice,omitempty"`
	// Intent is what the reply should hold; default text only. A provider
	// that can tell refuses at build what it cannot produce.
	Intent *model.Intent `json:"intent,omitempty"`
	// Extensions are provider-specific request fields
	// ([{provider, id, fields}]), passed on as model.Request.Extensions.
	Extensions []model.Extension `json:"extensions,omitempty"`
	// UndefinedToolRecovery answers a reply that calls a tool the node does
	// not offer with error results instead of failing (REF 8.7).
	UndefinedToolRecovery *RecoveryConfig `json:"undefined_tool_recovery,omitempty"`
	// RecoverPendingKey is the board var set to whether the node answered
	// undefined calls; default "recover_pending".
	RecoverPendingKey string `json:"recover_pending_key,omitempty"`
	// RecoverCountKey is the board var that counts the recoveries of the
	// run; default "recover_count".
	RecoverCountKey string `json:"recover_count_key,omitempty"`
}

// ModelRef is the object form of InferenceConfig.Model: the model either
// in ID or in Provider and Name, and the profile.
type ModelRef struct {
	ID       *ModelID `json:"id,omitempty"`
	Provider string   `json:"provider,omitempty"`
	Name     string   `json:"name,omitempty"`
	Profile  string   `json:"profile,omitempty"`
}

// ModelID is ModelRef.ID, the spec form of a model's identity.
type ModelID struct {
	Provider string `json:"provider,omitempty"`
	Name     string `json:"name,omitempty"`
}

// InferenceType returns the inference node type: each call sends the
// node's channel to a model.Provider and appends the assistant reply,
// tool calls included, to the channel. It never runs tools.
func InferenceType() NodeType { return inferenceType{} }

type inferenceType struct{}

func (inferenceType) Name() string { return InferenceTypeName }

func (inferenceType) Build(ctx context.Context, in NodeInput) (Handler, error) {
	var c InferenceConfig
	if err := DecodeConfig(in.Node.Config, &c); err != nil {
		return nil, err
	}
	ref, err := parseModelRef(c.Model)
	if err != nil {
		return nil, err
	}
	h := &inferenceHandler{model: ref.Name, profile: ref.Profile, channel: c.MessagesChannel, outputKey: c.OutputKey, usageKey: c.UsageKey,
		pendingKey: c.ToolPendingKey, stream: c.Stream, toolChoice: c.ToolChoice}
	if h.channel == "" {
		h.channel = agent.MainChannel
	}
	if h.pendingKey == "" {
		h.pendingKey = DefaultToolPendingKey
	}
	if h.providerKey, h.provider, err = providerFromDeps(in.Deps, ref.Provider); err != nil {
		return nil, err
	}
	if err := checkProfile(h.provider, h.providerKey, h.profile); err != nil {
		return nil, err
	}
	if err := h.buildIntent(c.Intent); err != nil {
		return nil, err
	}
	if err := h.buildExtensions(c.Extensions); err != nil {
		return nil, err
	}
	if err := h.buildSystem(ctx, in, c.SystemPrompt); err != nil {
		return nil, err
	}
	if err := h.buildTools(in.Deps, c); err != nil {
		return nil, err
	}
	if h.recovery, err = buildRecovery(c); err != nil {
		return nil, err
	}
	return h, nil
}

// parseModelRef reads config.model: absent, a string (the model name) or
// {provider, name}.
func parseModelRef(raw json.RawMessage) (ModelRef, error) {
	var ref ModelRef
	if isAbsent(raw) {
		return ref, nil
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		err := json.Unmarshal(t, &ref.Name)
		return ref, fault.Wrap(fault.Validation, err, "", "model")
	}
	if err := DecodeConfig(raw, &ref); err != nil {
		return ref, fault.Wrap(fault.Validation, err, "", "model: want a model name, {id: {provider, name}, profile} or {provider, name}")
	}
	if ref.ID != nil {
		if ref.Provider != "" || ref.Name != "" {
			return ref, fault.New(fault.Validation, "", "model: give id or provider and name, not both")
		}
		ref.Provider, ref.Name, ref.ID = ref.ID.Provider, ref.ID.Name, nil
	}
	return ref, nil
}

// checkProfile asks a provider that can tell whether it serves profile.
func checkProfile(p model.Provider, key, profile string) error {
	if profile == "" {
		return nil
	}
	pc, ok := p.(model.ProfileChecker)
	if !ok {
		return nil
	}
	if err := pc.CheckProfile(profile); err != nil {
		return fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "model.profile: provider %s", key)
	}
	return nil
}

// providerFromDeps finds the provider of a node: model.<name> for a named
// provider; the bare model dep, or the only model.* dep, otherwise.
func providerFromDeps(deps map[string]any, name string) (string, model.Provider, error) {
	bound := modelDeps(deps)
	key := ModelDep
	if name != "" {
		key = ModelDep + "." + name
	} else if _, ok := deps[ModelDep]; !ok && len(bound) == 1 {
		key = bound[0]
	}
	v, ok := deps[key]
	if !ok {
		have := "none"
		if len(bound) > 0 {
			have = strings.Join(bound, ", ")
		}
		return "", nil, fault.New(fault.Validation, "", "model: the engine has no dep %q (bound: %s)", key, have)
	}
	p, err := resource.As[model.Provider](key, v)
	if err != nil || agent.IsNil(p) {
		return "", nil, fault.New(fault.Validation, "", "model: dep %q is a %T, not a model.Provider", key, v)
	}
	return key, p, nil
}

// modelDeps lists the bound model dep keys, sorted.
func modelDeps(deps map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(deps)) {
		if k == ModelDep || strings.HasPrefix(k, ModelDep+".") {
			out = append(out, k)
		}
	}
	return out
}

// buildSystem resolves a {file}/{embed} system prompt now; an inline one
// is taken from the resolved config at every call.
func (h *inferenceHandler) buildSystem(ctx context.Context, in NodeInput, raw json.RawMessage) error {
	if isAbsent(raw) {
		return nil
	}
	text, err := in.ResolveText(ctx, raw)
	if err != nil {
		return fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "system_prompt")
	}
	_, isRef := resource.SourceOf(raw)
	h.system, h.systemInline = text, !isRef
	return nil
}

// buildTools checks the offered tools against the assembly bound as the
// engine's "tools" dep.
func (h *inferenceHandler) buildTools(deps map[string]any, c InferenceConfig) error {
	if c.AllTools && len(c.Tools) > 0 {
		return fault.New(fault.Validation, "", "tools: give tools or all_tools, not both")
	}
	if c.AllTools || len(c.Tools) > 0 {
		v, ok := deps[ToolsDep]
		if !ok {
			return fault.New(fault.Validation, "", "tools: the engine has no %q dep (a tool.Assembly)", ToolsDep)
		}
		asm, isAsm := v.(tool.Assembly)
		if !isAsm || agent.IsNil(asm) {
			return fault.New(fault.Validation, "", "tools: dep %q is a %T, not a tool.Assembly", ToolsDep, v)
		}
		h.tools, h.allTools, h.toolNames = asm, c.AllTools, slices.Clone(c.Tools)
		if _, err := h.definitions(); err != nil {
			return err
		}
	}
	switch c.ToolChoice {
	case "", model.ToolChoiceAuto, model.ToolChoiceNone:
	case model.ToolChoiceRequired:
		if h.tools == nil {
			return fault.New(fault.Validation, "", "tool_choice: required needs tools")
		}
	default:
		defs, _ := h.definitions()
		if !slices.ContainsFunc(defs, func(d tool.Definition) bool { return d.Name == c.ToolChoice }) {
			return fault.New(fault.Validation, "", "tool_choice: %q is not auto, none, required or an offered tool", c.ToolChoice)
		}
	}
	return nil
}

// definitions returns the offered tools, in the order of the config (all
// of the assembly's, sorted by name, for all_tools). A named tool the
// assembly lacks is a Validation error.
func (h *inferenceHandler) definitions() ([]tool.Definition, error) {
	if h.tools == nil {
		return nil, nil
	}
	all := h.tools.Definitions()
	if h.allTools {
		return all, nil
	}
	out := make([]tool.Definition, 0, len(h.toolNames))
	for i, name := range h.toolNames {
		j := slices.IndexFunc(all, func(d tool.Definition) bool { return d.Name == name })
		if j < 0 {
			return nil, fault.New(fault.Validation, "", "tools[%d]: the tool assembly has no tool %q", i, name)
		}
		if slices.ContainsFunc(out, func(d tool.Definition) bool { return d.Name == name }) {
			return nil, fault.New(fault.Validation, "", "tools[%d]: tool %q is listed twice", i, name)
		}
		out = append(out, all[j])
	}
	return out, nil
}

// inferenceHandler runs one inference node.
type inferenceHandler struct {
	providerKey  string
	provider     model.Provider
	model        string
	profile      string
	channel      string
	system       string
	systemInline bool
	outputKey    string
	usageKey     string
	pendingKey   string
	stream       bool
	tools        tool.Assembly
	allTools     bool
	toolNames    []string
	toolChoice   string
	recovery     recovery
	intent       model.Intent
	extensions   []model.Extension
}

var (
	_ Handler       = (*inferenceHandler)(nil)
	_ LiteralConfig = (*inferenceHandler)(nil)
)

// LiteralKeys leaves every key but system_prompt out of ${board}
// resolution.
func (h *inferenceHandler) LiteralKeys() []string {
	return []string{"model", "messages_channel", "output_key", "usage_key", "tool_pending_key", "stream", "tools",
		"all_tools", "tool_choice", "intent", "extensions",
		"undefined_tool_recovery", "recover_pending_key", "recover_count_key"}
}

// systemPrompt is the system prompt of one call: the resolved inline
// prompt, or the prompt loaded at build.
func (h *inferenceHandler) systemPrompt(c *Call) (string, error) {
	if !h.systemInline {
		return h.system, nil
	}
	switch v := c.Config["system_prompt"].(type) {
	case string:
		return v, nil
	case nil:
		return h.system, nil
	default:
		return "", fault.New(fault.Validation, opInference, "node %q: system_prompt resolved to %T, want a string", c.Node, v)
	}
}

func (h *inferenceHandler) String() string {
	return fmt.Sprintf("inference(%s, model %q)", h.providerKey, h.model)
}

// buildIntent checks config.intent (default text only) and asks a provider
// that can tell whether it produces it (REF 5.3.1).
func (h *inferenceHandler) buildIntent(in *model.Intent) error {
	h.intent = model.TextOnly
	if in != nil {
		h.intent = *in
	}
	if h.intent == (model.Intent{}) {
		return fault.New(fault.Validation, "", "intent: asks for no modality (text, image, audio, video)")
	}
	if ic, ok := h.provider.(model.IntentChecker); ok {
		if err := ic.CheckIntent(h.intent); err != nil {
			return fault.Wrap(fault.KindOr(err, fault.Validation), err, "", "intent: provider %s", h.providerKey)
		}
	}
	return nil
}

// buildExtensions checks config.extensions: each names its provider and
// an id, once per provider, and its fields are a JSON object.
func (h *inferenceHandler) buildExtensions(list []model.Extension) error {
	type key struct{ provider, id string }
	seen := map[key]bool{}
	for i, x := range list {
		switch {
		case x.Provider == "":
			return fault.New(fault.Validation, "", "extensions[%d].provider: required", i)
		case x.ID == "":
			return fault.New(fault.Validation, "", "extensions[%d].id: required", i)
		case seen[key{x.Provider, x.ID}]:
			return fault.New(fault.Validation, "", "extensions[%d]: extension %q of provider %q is listed twice", i, x.ID, x.Provider)
		}
		seen[key{x.Provider, x.ID}] = true
		if t := bytes.TrimSpace(x.Fields); len(t) == 0 || t[0] != '{' {
			return fault.New(fault.Validation, "", "extensions[%d].fields: want a JSON object", i)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(x.Fields, &fields); err != nil {
			return fault.Wrap(fault.Validation, err, "", "extensions[%d].fields", i)
		}
		compact, err := json.Marshal(fields)
		if err != nil {
			return fault.Wrap(fault.Validation, err, "", "extensions[%d].fields", i)
		}
		h.extensions = append(h.extensions, model.Extension{Provider: x.Provider, ID: x.ID, Fields: compact})
	}
	return nil
}

// cloneExtensions copies the extensions for one request.
func cloneExtensions(list []model.Extension) []model.Extension {
	if len(list) == 0 {
		return nil
	}
	out := make([]model.Extension, len(list))
	for i, x := range list {
		out[i] = model.Extension{Provider: x.Provider, ID: x.ID, Fields: bytes.Clone(x.Fields)}
	}
	return out
}
