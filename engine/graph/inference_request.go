package graph

import (
	"bytes"
	"encoding/json"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/model"
)

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
