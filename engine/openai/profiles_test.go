package openai

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 8.2: a request naming a profile is sent with that profile's
// key and endpoint (the ${env:...} references of its secrets expanded);
// other requests use the provider's own.
func TestProfilesPickKeyAndEndpoint(t *testing.T) {
	t.Parallel()
	main := newWire(t, replyJSON(t, 200, "chat_text.json"))
	eu := newWire(t, replyJSON(t, 200, "chat_text.json"))
	env := map[string]string{"EU_KEY": "sk-eu"}
	loader := deploy.NewLoader(deploy.LoaderConfig{LookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}})
	settings := `{"base_url":"` + main.URL + `/v1","api_key":"sk-main","model":"gpt-4o-mini","headers":{"X-A":"a"},
		"profiles":[{"id":"eu","operations":["generate"],"secrets":{"api_key":"${env:EU_KEY}"},
			"spec":{"base_url":"` + eu.URL + `/v1","organization":"org-eu","headers":{"X-B":"b"}}},
			{"id":"same-endpoint","secrets":{"api_key":"sk-other"}}]}`
	v, err := Factory().New(context.Background(), resource.Input{Name: "llm", Settings: json.RawMessage(settings), Loader: loader})
	require.NoError(t, err)
	p := v.(*Provider)
	defer p.Close()

	tests := []struct {
		profile string
		server  *wire
		auth    string
		org     string
		headerB string
	}{
		{"", main, "Bearer sk-main", "", ""},
		{"eu", eu, "Bearer sk-eu", "org-eu", "b"},
		{"same-endpoint", main, "Bearer sk-other", "", ""},
	}
	for _, tt := range tests {
		before := len(tt.server.seen())
		req := userRequest("Hi")
		req.Profile = tt.profile
		_, err := p.Generate(context.Background(), req, nil)
		require.NoError(t, err, tt.profile)
		got := tt.server.seen()
		require.Len(t, got, before+1, tt.profile)
		h := got[before].Header
		assert.Equal(t, tt.auth, h.Get("Authorization"), tt.profile)
		assert.Equal(t, tt.org, h.Get("OpenAI-Organization"), tt.profile)
		assert.Equal(t, "a", h.Get("X-A"), "the provider's headers go with every profile")
		assert.Equal(t, tt.headerB, h.Get("X-B"), tt.profile)
	}
}

// REF 8.2: an unknown profile, or one that does not generate, is a
// Validation error naming it, before any request.
func TestProfilesRefused(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 200, "chat_text.json"))
	p := newProvider(t, w.URL, func(s *Settings) {
		s.Profiles = []ProfileSettings{{ID: "embedder", Operations: []string{OpEmbed}}, {ID: "eu"}}
	})
	tests := []struct{ profile, want string }{
		{"us", `profile "us": the provider has no such profile (profiles: embedder, eu)`},
		{"embedder", `profile "embedder" does not serve generate (operations: embed)`},
	}
	for _, tt := range tests {
		require.ErrorIs(t, p.CheckProfile(tt.profile), fault.Validation)
		req := userRequest("Hi")
		req.Profile = tt.profile
		_, err := p.Generate(context.Background(), req, nil)
		require.ErrorIs(t, err, fault.Validation)
		assert.Contains(t, err.Error(), tt.want)
	}
	require.NoError(t, p.CheckProfile(""))
	require.NoError(t, p.CheckProfile("eu"))
	assert.Empty(t, w.seen())
}

// REF 8.2: profiles are decoded strictly: a secret other than
// api_key, a bad id, operation or endpoint fail the build.
func TestProfileSettingsRejects(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, profiles, want string }{
		{"other secret", `[{"id":"a","secrets":{"token":"x"}}]`, `unknown field "token"`},
		{"unknown key", `[{"id":"a","region":"eu"}]`, `unknown field "region"`},
		{"no id", `[{}]`, "settings.profiles[0].id"},
		{"bad id", `[{"id":"a b"}]`, `settings.profiles[0].id: "a b" is not a profile id`},
		{"twice", `[{"id":"a"},{"id":"a"}]`, `settings.profiles[1].id: profile "a" is listed twice`},
		{"bad operation", `[{"id":"a","operations":["chat"]}]`, `settings.profiles[0].operations[0]: "chat"`},
		{"bad base url", `[{"id":"a","spec":{"base_url":"ftp://x"}}]`, "settings.profiles[0].spec.base_url"},
		{"bad header", `[{"id":"a","spec":{"headers":{"a b":"c"}}}]`, "settings.profiles[0].spec"},
		{"blank key", `[{"id":"a","secrets":{"api_key":" "}}]`, "settings.profiles[0].secrets"},
		{"unknown spec key", `[{"id":"a","spec":{"region":"eu"}}]`, `unknown field "region"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := `{"api_key":"k","profiles":` + tt.profiles + `}`
			_, err := Factory().New(context.Background(), resource.Input{Name: "llm", Settings: json.RawMessage(in)})
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// FuzzSettings decodes and builds any settings document: it never panics,
// fails only with Validation, and a provider it builds serves exactly the
// profiles it lists (when they generate).
func FuzzSettings(f *testing.F) {
	for _, s := range []string{
		`{"api_key":"k"}`, `{"auth":{"scheme":"none"},"base_url":"http://localhost:11434/v1"}`,
		`{"api_key":"k","profiles":[{"id":"eu","operations":["generate"],"secrets":{"api_key":"e"},"spec":{"base_url":"https://eu.example.com/v1","headers":{"X":"y"}}}]}`,
		`{"api_key":"k","profiles":[{"id":"a","operations":["embed"]},{"id":"b"}]}`,
		`{"api_key":"k","profiles":[{"id":"a"},{"id":"a"}]}`, `{"api_key":"k","profiles":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := DecodeSettings(raw)
		if err != nil {
			return
		}
		p, err := New(s)
		if err != nil {
			if !fault.Is(err, fault.Validation) {
				t.Fatalf("new: not a Validation error: %v", err)
			}
			return
		}
		defer p.Close()
		for _, ps := range s.Profiles {
			err := p.CheckProfile(ps.ID)
			generates := len(ps.Operations) == 0 || slices.Contains(ps.Operations, OpGenerate)
			if (err == nil) != generates {
				t.Fatalf("profile %q (operations %v): CheckProfile gave %v", ps.ID, ps.Operations, err)
			}
		}
		if err := p.CheckProfile("\x00not-listed"); !fault.Is(err, fault.Validation) {
			t.Fatalf("an unlisted profile: %v", err)
		}
	})
}

// REF 5.3.1: Chat Completions produce text: another modality is
// refused before any request.
func TestIntentOtherThanTextRefused(t *testing.T) {
	t.Parallel()
	w := newWire(t, replyJSON(t, 200, "chat_text.json"))
	p := newProvider(t, w.URL)
	require.NoError(t, p.CheckIntent(model.TextOnly))
	for _, in := range []model.Intent{{Image: true}, {Text: true, Audio: true}, {Video: true}} {
		require.ErrorIs(t, p.CheckIntent(in), fault.Validation)
		req := userRequest("Hi")
		req.Intent = in
		_, err := p.Generate(context.Background(), req, nil)
		require.ErrorIs(t, err, fault.Validation)
		assert.Contains(t, err.Error(), "the provider produces text only")
	}
	assert.Empty(t, w.seen())
}
