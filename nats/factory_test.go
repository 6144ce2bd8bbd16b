package nats_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/nats"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 12.1.4: the factory decodes its settings strictly and builds a
// connected bus; a bad setting is a Validation error that names it.
func TestBusFactory(t *testing.T) {
	srv := server(t)
	f := nats.BusFactory()
	assert.Equal(t, resource.Spec{Kind: "event.Bus", Impl: "nats"}, f.Spec())
	require.NoError(t, f.Spec().Validate())
	url, _ := json.Marshal(srv.URL())
	for _, tc := range []struct {
		name, settings string
		err            string // "" when valid
	}{
		{"minimal", `{"url": ` + string(url) + `}`, ""},
		{"every key", `{"url": ` + string(url) + `, "node": "n1", "advertise": "http://n1", "subject_prefix": "corp",
			"stream": "CORP", "replicas": 1, "storage": "memory", "max_age": "1h", "ephemeral": [],
			"buffer_size": 8, "route_cache_size": 0, "lease_bucket": "CORP_LEASES", "lease_ttl": "3s",
			"no_discovery": true, "connect_timeout": "2s", "publish_timeout": "2s"}`, ""},
		{"no url", `{}`, "url: required"},
		{"unknown key", `{"url": ` + string(url) + `, "urls": "x"}`, "unknown field"},
		{"bad storage", `{"url": ` + string(url) + `, "storage": "disk"}`, "neither file nor memory"},
		{"bad duration", `{"url": ` + string(url) + `, "lease_ttl": "soon"}`, "lease_ttl"},
		{"negative duration", `{"url": ` + string(url) + `, "max_age": "-1h"}`, "max_age"},
		{"short lease", `{"url": ` + string(url) + `, "lease_ttl": "500ms"}`, "lease_ttl"},
		{"bad buffer", `{"url": ` + string(url) + `, "buffer_size": 0}`, "buffer_size"},
		{"bad pattern", `{"url": ` + string(url) + `, "ephemeral": ["a.>.b"]}`, "ephemeral[0]"},
		{"bad stream name", `{"url": ` + string(url) + `, "stream": "a.b"}`, "stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := f.New(context.Background(), resource.Input{Name: "events", Settings: json.RawMessage(tc.settings)})
			if tc.err == "" {
				require.NoError(t, err)
				b, ok := v.(*nats.Bus)
				require.True(t, ok, "a %T", v)
				require.NoError(t, b.Close())
				return
			}
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), tc.err)
			assert.Contains(t, err.Error(), `resource "events"`)
		})
	}
}

// REF 12.1.4: in a deployment document, a setting the nats bus refuses is
// named at its own file and line.
func TestBadSettingNamedAtItsLine(t *testing.T) {
	dir := absDir(t)
	for _, tc := range []struct{ name, line, want string }{
		{"short lease", "lease_ttl: 500ms", "lease_ttl"},
		{"bad storage", "storage: disk", "storage"},
		{"bad bucket", "lease_bucket: a:b", "lease_bucket"},
		{"bad pattern", "ephemeral: [a.b, a.>.b]", "ephemeral[1]"},
		{"bad buffer", "buffer_size: 0", "buffer_size"},
		{"bad replicas", "replicas: 9", "replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			layer := "resources:\n  events:\n    kind: event.Bus\n    impl: nats\n    settings:\n      url: nats://127.0.0.1:1\n      " + tc.line + "\n"
			doc, _, err := deploy.LoadLayers([]deploy.Layer{
				{Name: "base", Data: read(t, dir, "deploy.yaml"), File: "deploy.yaml"},
				{Name: "nats", Priority: 1, Data: []byte(layer), File: "bad.yaml"},
			}, deploy.ParseConfig{BaseDir: dir})
			require.NoError(t, err)
			_, err = builtin.NewBuilder().Build(t.Context(), doc)
			require.ErrorIs(t, err, fault.Validation)
			assert.Contains(t, err.Error(), "bad.yaml:7", "names the setting's line")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
