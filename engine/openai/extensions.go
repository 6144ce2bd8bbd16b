package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/model"
	goopenai "github.com/sashabaranov/go-openai"
)

// DefaultID is the provider id extensions name when settings.id is empty.
const DefaultID = "openai"

// reservedFields are the request keys the driver sets itself, whether or
// not a given request carries them: an extension may not override them.
var reservedFields = []string{"model", "messages", "tools", "tool_choice", "stream", "stream_options",
	"functions", "function_call"}

type extraBodyKey struct{}

// extraFields merges the fields of the extensions whose provider is p's id,
// in order. A field the driver sets (model, messages, tools, stream...) or
// that two extensions set is a Validation error naming the extension.
func (p *Provider) extraFields(exts []model.Extension, creq goopenai.ChatCompletionRequest) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	from := map[string]string{}
	var taken map[string]json.RawMessage
	for _, x := range exts {
		if x.Provider != p.cfg.id {
			continue
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(x.Fields, &fields); err != nil || fields == nil {
			return nil, fault.New(fault.Validation, opGenerate, "extension %q: fields must be a JSON object", x.ID)
		}
		if taken == nil {
			body, err := json.Marshal(creq)
			if err != nil {
				return nil, fault.Wrap(fault.Internal, err, opGenerate, "extension %q", x.ID)
			}
			_ = json.Unmarshal(body, &taken)
			out = map[string]json.RawMessage{}
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			if _, set := taken[k]; set || slices.Contains(reservedFields, k) {
				return nil, fault.New(fault.Validation, opGenerate, "extension %q: field %q is set by the driver and cannot be overridden", x.ID, k)
			}
			if prev, dup := from[k]; dup {
				return nil, fault.New(fault.Validation, opGenerate, "extension %q: field %q is already set by extension %q", x.ID, k, prev)
			}
			out[k], from[k] = fields[k], x.ID
		}
	}
	return out, nil
}

// withExtraBody carries the extension fields of a call to the transport.
func withExtraBody(ctx context.Context, fields map[string]json.RawMessage) context.Context {
	if len(fields) == 0 {
		return ctx
	}
	return context.WithValue(ctx, extraBodyKey{}, fields)
}

// mergeExtraBody adds the fields on req's context to its JSON body: the
// SDK has no extra-body option, so the transport rewrites the body it was
// given. A body that is not a JSON object is left alone.
func mergeExtraBody(req *http.Request) error {
	fields, ok := req.Context().Value(extraBodyKey{}).(map[string]json.RawMessage)
	if !ok || req.Body == nil || !strings.HasSuffix(req.URL.Path, "/chat/completions") {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) == nil && m != nil {
		for k, v := range fields {
			m[k] = v
		}
		if merged, err := json.Marshal(m); err == nil {
			body = merged
		}
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return nil
}
