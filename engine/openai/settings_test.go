package openai

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 8.3
func TestSettingsRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"unknown key", `{"api_key":"k","api_key_env":"X"}`, `unknown field "api_key_env"`},
		{"no key", `{}`, "settings.api_key: required"},
		{"blank key", `{"api_key":"  "}`, "settings.api_key: required"},
		{"key with scheme none", `{"api_key":"k","auth":{"scheme":"none"}}`, "settings.api_key: auth.scheme none sends no key"},
		{"unknown scheme", `{"api_key":"k","auth":{"scheme":"basic"}}`, `settings.auth.scheme: "basic"`},
		{"header scheme without header", `{"api_key":"k","auth":{"scheme":"header"}}`, "settings.auth.header"},
		{"header with bearer", `{"api_key":"k","auth":{"header":"X-Key"}}`, "settings.auth.header: only scheme"},
		{"bad base url", `{"api_key":"k","base_url":"localhost:8080"}`, "settings.base_url"},
		{"ftp base url", `{"api_key":"k","base_url":"ftp://x/v1"}`, "settings.base_url"},
		{"bad header name", `{"api_key":"k","headers":{"a b":"c"}}`, "settings.headers"},
		{"header value with newline", `{"api_key":"k","headers":{"X":"a\nb"}}`, "settings.headers.X"},
		{"bad timeout", `{"api_key":"k","timeout":"soon"}`, "settings.timeout"},
		{"negative backoff", `{"api_key":"k","retry_backoff":"-1s"}`, "settings.retry_backoff"},
		{"too many retries", `{"api_key":"k","retries":11}`, "settings.retries"},
		{"negative retries", `{"api_key":"k","retries":-1}`, "settings.retries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Factory().New(context.Background(), resource.Input{Name: "llm", Settings: json.RawMessage(tt.in)})
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), `build openai provider "llm"`)
		})
	}
}

// REF 8.1
func TestFactorySpec(t *testing.T) {
	t.Parallel()
	spec := Factory().Spec()
	assert.Equal(t, model.Kind, spec.Kind)
	assert.Equal(t, "openai", spec.Impl)
	assert.Empty(t, spec.Deps)
}

// The key comes from the environment through ${env:NAME}, expanded in
// every string of the settings.
// REF 8.2
// REF 8.9
func TestFactoryExpandsEnv(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 200, "chat_text.json"))
	env := map[string]string{"OPENAI_API_KEY": "sk-from-env", "ROUTE": "green"}
	loader := deploy.NewLoader(deploy.LoaderConfig{LookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}})
	settings := `{"base_url":"` + w.URL + `/v1","api_key":"${env:OPENAI_API_KEY}","model":"gpt-4o-mini",
		"headers":{"X-Route":"${env:ROUTE}"}}`
	v, err := Factory().New(context.Background(), resource.Input{Name: "llm", Settings: json.RawMessage(settings), Loader: loader})
	require.NoError(t, err)
	p := v.(*Provider)
	defer p.Close()
	_, err = p.Generate(context.Background(), userRequest("Hi"), nil)
	require.NoError(t, err)
	h := w.seen()[0].Header
	assert.Equal(t, "Bearer sk-from-env", h.Get("Authorization"))
	assert.Equal(t, "green", h.Get("X-Route"))

	_, err = Factory().New(context.Background(), resource.Input{Name: "llm",
		Settings: json.RawMessage(`{"api_key":"${env:MISSING_KEY}"}`), Loader: loader})
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "MISSING_KEY")
}
