package runtime_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 1.1: every key has its default.
func TestDecodeConfigDefaults(t *testing.T) {
	cfg, err := runtime.DecodeConfig(json.RawMessage(`{"event_bus":" events "}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "events", cfg.EventBus, "event_bus is trimmed")
	assert.Equal(t, "", cfg.CheckpointStore)
	assert.Empty(t, cfg.ExternalDeps)
	assert.Nil(t, cfg.DynamicCatalog)
	assert.Equal(t, runtime.SessionsConfig{Tunables: session.Tunables{
		IdleTimeout: 10 * time.Minute, SinkBuffer: 256, DeliveryConcurrency: 8,
		SpeculativeBufferEvents: 1024, SpeculativeBufferBytes: 1 << 20, MaxSessions: 1024,
	}}, cfg.Sessions)
	assert.Equal(t, session.DefaultTunables(), cfg.Sessions.Tunables, "one set of defaults")

	cfg, err = runtime.DecodeConfig(json.RawMessage(`{"event_bus":"b","sessions":{"sink_buffer":null,"idle_timeout":null},"dynamic_catalog":null}`), nil)
	require.NoError(t, err)
	assert.Equal(t, session.DefaultTunables(), cfg.Sessions.Tunables, "null keeps the default")
	assert.Nil(t, cfg.DynamicCatalog)
}

// REF 1.1: integers and booleans take JSON literals or strings, and
// ${env:NAME} is expanded before decoding.
func TestDecodeConfigStringsAndEnv(t *testing.T) {
	env := map[string]string{"BUF": "512", "RESUME": "true"}
	expand := func(s string) (string, error) {
		switch s {
		case "${env:BUF}":
			return env["BUF"], nil
		case "${env:RESUME}":
			return env["RESUME"], nil
		case "${env:MISSING}":
			return "", fault.New(fault.Validation, "expand", "environment variable MISSING is not set")
		}
		return s, nil
	}
	cfg, err := runtime.DecodeConfig(json.RawMessage(`{"event_bus":"bus","checkpoint_store":"cps",
		"sessions":{"sink_buffer":"${env:BUF}","delivery_concurrency":"16","max_sessions":3,
		"speculative_buffer_events":" 10 ","speculative_buffer_bytes":2048,"resume":"${env:RESUME}","idle_timeout":"90s"}}`), expand)
	require.NoError(t, err)
	assert.Equal(t, runtime.SessionsConfig{Tunables: session.Tunables{
		IdleTimeout: 90 * time.Second, SinkBuffer: 512, DeliveryConcurrency: 16,
		SpeculativeBufferEvents: 10, SpeculativeBufferBytes: 2048, MaxSessions: 3,
	}, Resume: true}, cfg.Sessions)

	_, err = runtime.DecodeConfig(json.RawMessage(`{"event_bus":"${env:MISSING}"}`), expand)
	require.ErrorIs(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "MISSING")
}

// REF 1.2.1, 1.2.2, 1.2.5, 1.2.7, 1.2.8: the decode-time rules, each
// naming the key.
func TestDecodeConfigRules(t *testing.T) {
	tests := []struct {
		name, raw, path, msg string
	}{
		{"1.2.1 no runtime section", ``, "runtime", "runtime section is required"},
		{"1.2.1 null runtime section", `null`, "runtime", "runtime section is required"},
		{"1.2.2 missing event_bus", `{}`, "runtime.event_bus", "event_bus is required"},
		{"1.2.2 blank event_bus", `{"event_bus":"  "}`, "runtime.event_bus", "event_bus is required"},
		{"1.2.5 resume without store", `{"event_bus":"b","sessions":{"resume":true}}`, "runtime.sessions.resume", "sessions.resume requires checkpoint_store"},
		{"1.2.7 idle_timeout unparsable", `{"event_bus":"b","sessions":{"idle_timeout":"soon"}}`, "runtime.sessions.idle_timeout", "Go duration"},
		{"1.2.7 idle_timeout zero", `{"event_bus":"b","sessions":{"idle_timeout":"0s"}}`, "runtime.sessions.idle_timeout", "greater than 0"},
		{"1.2.7 idle_timeout negative", `{"event_bus":"b","sessions":{"idle_timeout":"-1m"}}`, "runtime.sessions.idle_timeout", "greater than 0"},
		{"1.2.7 sink_buffer low", `{"event_bus":"b","sessions":{"sink_buffer":0}}`, "runtime.sessions.sink_buffer", "[1, 1048576]"},
		{"1.2.7 sink_buffer high", `{"event_bus":"b","sessions":{"sink_buffer":1048577}}`, "runtime.sessions.sink_buffer", "[1, 1048576]"},
		{"1.2.7 delivery_concurrency high", `{"event_bus":"b","sessions":{"delivery_concurrency":1025}}`, "runtime.sessions.delivery_concurrency", "[1, 1024]"},
		{"1.2.7 delivery_concurrency low", `{"event_bus":"b","sessions":{"delivery_concurrency":"0"}}`, "runtime.sessions.delivery_concurrency", "[1, 1024]"},
		{"1.2.7 speculative events high", `{"event_bus":"b","sessions":{"speculative_buffer_events":1048577}}`, "runtime.sessions.speculative_buffer_events", "[1, 1048576]"},
		{"1.2.7 speculative bytes high", `{"event_bus":"b","sessions":{"speculative_buffer_bytes":268435457}}`, "runtime.sessions.speculative_buffer_bytes", "[1, 268435456]"},
		{"1.2.7 speculative bytes low", `{"event_bus":"b","sessions":{"speculative_buffer_bytes":-5}}`, "runtime.sessions.speculative_buffer_bytes", "[1, 268435456]"},
		{"1.2.7 max_sessions zero", `{"event_bus":"b","sessions":{"max_sessions":0}}`, "runtime.sessions.max_sessions", "must be > 0"},
		{"1.1 int that is not a number", `{"event_bus":"b","sessions":{"sink_buffer":"lots"}}`, "runtime.sessions.sink_buffer", "want an integer"},
		{"1.1 bool that is not a bool", `{"event_bus":"b","sessions":{"resume":"maybe"}}`, "runtime.sessions.resume", "want true or false"},
		{"1.1 unknown key", `{"event_bus":"b","sesions":{}}`, "runtime", `unknown field "sesions"`},
		{"1.1 unknown sessions key", `{"event_bus":"b","sessions":{"buffer":1}}`, "runtime.sessions", `unknown field "buffer"`},
		{"1.1 int that is too large", `{"event_bus":"b","sessions":{"max_sessions":12345678901234567890}}`, "runtime.sessions.max_sessions", "want an integer"},
		{"1.1 idle_timeout that is a number", `{"event_bus":"b","sessions":{"idle_timeout":600}}`, "runtime.sessions.idle_timeout", "Go duration"},
		{"1.1 sessions that is not a mapping", `{"event_bus":"b","sessions":[]}`, "runtime.sessions", "want a mapping"},
		{"1.1 not JSON", `{"event_bus":`, "runtime", "json"},
		{"1.2.8 empty tools", `{"event_bus":"b","dynamic_catalog":{"tools":{}}}`, "runtime.dynamic_catalog.tools", "must not be empty"},
		{"1.2.8 missing tools", `{"event_bus":"b","dynamic_catalog":{}}`, "runtime.dynamic_catalog.tools", "must not be empty"},
		{"1.2.8 blank key", `{"event_bus":"b","dynamic_catalog":{"tools":{" ":"x"}}}`, "runtime.dynamic_catalog.tools", "blank"},
		{"1.2.8 blank value", `{"event_bus":"b","dynamic_catalog":{"tools":{"default":" "}}}`, "runtime.dynamic_catalog.tools.default", "blank"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runtime.DecodeConfig(json.RawMessage(tt.raw), nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
			var ce *runtime.ConfigError
			require.True(t, errors.As(err, &ce), "want a *ConfigError, got %T", err)
			assert.Equal(t, tt.path, ce.Path)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

// REF 1.7.1: external_deps entries are trimmed, need a name without
// '/', a contract, and unique names.
func TestDecodeConfigExternalDeps(t *testing.T) {
	cfg, err := runtime.DecodeConfig(json.RawMessage(`{"event_bus":"b","external_deps":[{"name":" db ","contract":"db.Pool"}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, []runtime.ExternalDependency{{Name: "db", Contract: "db.Pool"}}, cfg.ExternalDeps)

	tests := []struct {
		name, raw string
		kind      *fault.Kind
		path      string
	}{
		{"blank name", `[{"name":" ","contract":"c"}]`, fault.Validation, "runtime.external_deps[0].name"},
		{"slash in name", `[{"name":"a/b","contract":"c"}]`, fault.Validation, "runtime.external_deps[0].name"},
		{"no contract", `[{"name":"a"}]`, fault.Validation, "runtime.external_deps[0].contract"},
		{"duplicate", `[{"name":"a","contract":"c"},{"name":" a","contract":"c"}]`, fault.Conflict, "runtime.external_deps[1].name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runtime.DecodeConfig(json.RawMessage(`{"event_bus":"b","external_deps":`+tt.raw+`}`), nil)
			require.ErrorIs(t, err, tt.kind)
			var ce *runtime.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.path, ce.Path)
		})
	}
}

func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"event_bus":"b","sessions":{"sink_buffer":"12","resume":false}}`))
	f.Add([]byte(`{"event_bus":"b","external_deps":[{"name":"x","contract":"y"}],"dynamic_catalog":{"tools":{"default":"t"}}}`))
	f.Add([]byte(`{"event_bus":1}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := runtime.DecodeConfig(raw, nil)
		if err != nil {
			if fault.KindOf(err) == nil {
				t.Fatalf("error without a kind: %v", err)
			}
			return
		}
		s := cfg.Sessions
		if cfg.EventBus == "" || s.IdleTimeout <= 0 || s.SinkBuffer < 1 || s.SinkBuffer > runtime.MaxSinkBuffer ||
			s.DeliveryConcurrency < 1 || s.DeliveryConcurrency > runtime.MaxDeliveryConcurrency || s.MaxSessions < 1 ||
			s.SpeculativeBufferEvents < 1 || s.SpeculativeBufferBytes < 1 || (s.Resume && cfg.CheckpointStore == "") {
			t.Fatalf("accepted a config out of bounds: %+v", cfg)
		}
	})
}
