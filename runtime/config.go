package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
)

// Defaults and bounds of the runtime: section (REF 1.1).
const (
	DefaultIdleTimeout             = 10 * time.Minute
	DefaultSinkBuffer              = 256
	DefaultDeliveryConcurrency     = 8
	DefaultSpeculativeBufferEvents = 1024
	DefaultSpeculativeBufferBytes  = 1 << 20
	DefaultMaxSessions             = 1024

	MaxSinkBuffer              = 1 << 20
	MaxDeliveryConcurrency     = 1024
	MaxSpeculativeBufferEvents = 1 << 20
	MaxSpeculativeBufferBytes  = 256 << 20
)

// Config is the decoded runtime: section of a deployment document.
type Config struct {
	EventBus        string               // resource name of the event.Bus; required
	CheckpointStore string               // resource name of the agent.CheckpointStore; "" disables checkpointing
	ExternalDeps    []ExternalDependency // caller-owned values the document consumes
	Sessions        SessionsConfig
	DynamicCatalog  *DynamicCatalog // nil when the section is absent
}

// SessionsConfig tunes the session manager.
type SessionsConfig struct {
	IdleTimeout             time.Duration
	SinkBuffer              int
	DeliveryConcurrency     int
	SpeculativeBufferEvents int
	SpeculativeBufferBytes  int
	MaxSessions             int
	Resume                  bool
}

// DynamicCatalog maps agent ids (or "default") to tool.Assembly resources.
type DynamicCatalog struct {
	Tools map[string]string
}

// DefaultAgentKey is the dynamic_catalog.tools key that covers every agent
// without its own mapping.
const DefaultAgentKey = "default"

// ConfigError is a problem with one key of the runtime: section. Path is
// the document path, for example "runtime.sessions.sink_buffer".
type ConfigError struct {
	Path string
	Err  error
}

func (e *ConfigError) Error() string { return e.Path + ": " + e.Err.Error() }

// Unwrap returns the cause, which carries the error kind.
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(path string, k *fault.Kind, format string, args ...any) error {
	return &ConfigError{Path: path, Err: fault.New(k, "", format, args...)}
}

// object decodes raw as a JSON object whose keys must be among allowed;
// an unknown key is a Validation error naming path.key.
func object(raw json.RawMessage, path string, allowed ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, configErr(path, fault.Validation, "want an object, got %s", abbreviate(raw))
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			return nil, configErr(path+"."+k, fault.Validation, "unknown field %q", k)
		}
	}
	return m, nil
}

// field decodes m[key] into out with a Validation error naming path.key.
func field(m map[string]json.RawMessage, path, key string, out any) (bool, error) {
	raw, ok := m[key]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return false, &ConfigError{Path: path + "." + key, Err: fault.Wrap(fault.Validation, err, "", "")}
	}
	return true, nil
}

func abbreviate(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}

// flexInt and flexBool accept a JSON literal or a string, so that
// ${env:NAME} can feed them.
type flexInt int64

func (f *flexInt) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if uq, err := strconv.Unquote(s); err == nil {
		s = strings.TrimSpace(uq)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("want an integer, got %s", b)
	}
	*f = flexInt(n)
	return nil
}

type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if uq, err := strconv.Unquote(s); err == nil {
		s = strings.TrimSpace(uq)
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false, got %s", b)
	}
	*f = flexBool(v)
	return nil
}

// DecodeConfig decodes the runtime: subtree strictly (REF 1.1): expand
// is applied to every string scalar first (nil expands nothing), unknown keys
// are errors, defaults are filled in and every bound is checked. Errors are
// *ConfigError values naming the key; their kind is Validation. An absent
// section (nil or null) is a Validation error.
func DecodeConfig(raw json.RawMessage, expand func(string) (string, error)) (Config, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return Config{}, configErr("runtime", fault.Validation, "runtime section is required")
	}
	if expand != nil {
		var err error
		if raw, err = resource.ExpandJSON(raw, expand); err != nil {
			return Config{}, &ConfigError{Path: "runtime", Err: fault.Wrap(fault.Validation, err, "", "expand")}
		}
	}
	top, err := object(raw, "runtime", "event_bus", "checkpoint_store", "external_deps", "sessions", "dynamic_catalog")
	if err != nil {
		return Config{}, err
	}
	var cfg Config
	var rawDeps []ExternalDependency
	var rawSessions, rawCatalog json.RawMessage
	for _, f := range []struct {
		key string
		out any
	}{{"event_bus", &cfg.EventBus}, {"checkpoint_store", &cfg.CheckpointStore}, {"external_deps", &rawDeps},
		{"sessions", &rawSessions}, {"dynamic_catalog", &rawCatalog}} {
		if _, err := field(top, "runtime", f.key, f.out); err != nil {
			return Config{}, err
		}
	}
	cfg.EventBus = strings.TrimSpace(cfg.EventBus)
	cfg.CheckpointStore = strings.TrimSpace(cfg.CheckpointStore)
	if cfg.EventBus == "" {
		return Config{}, configErr("runtime.event_bus", fault.Validation, "event_bus is required")
	}
	if cfg.ExternalDeps, err = normalizeExternalDeps(rawDeps); err != nil {
		return Config{}, err
	}
	if cfg.Sessions, err = decodeSessions(rawSessions); err != nil {
		return Config{}, err
	}
	if cfg.Sessions.Resume && cfg.CheckpointStore == "" {
		return Config{}, configErr("runtime.sessions.resume", fault.Validation, "sessions.resume requires checkpoint_store")
	}
	if cfg.DynamicCatalog, err = decodeCatalog(rawCatalog); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func decodeSessions(raw json.RawMessage) (SessionsConfig, error) {
	s := SessionsConfig{
		IdleTimeout:             DefaultIdleTimeout,
		SinkBuffer:              DefaultSinkBuffer,
		DeliveryConcurrency:     DefaultDeliveryConcurrency,
		SpeculativeBufferEvents: DefaultSpeculativeBufferEvents,
		SpeculativeBufferBytes:  DefaultSpeculativeBufferBytes,
		MaxSessions:             DefaultMaxSessions,
	}
	if raw == nil {
		return s, nil
	}
	const path = "runtime.sessions"
	m, err := object(raw, path, "idle_timeout", "sink_buffer", "delivery_concurrency",
		"speculative_buffer_events", "speculative_buffer_bytes", "max_sessions", "resume")
	if err != nil {
		return s, err
	}
	var idle string
	if ok, err := field(m, path, "idle_timeout", &idle); err != nil {
		return s, err
	} else if ok {
		d, perr := time.ParseDuration(strings.TrimSpace(idle))
		if perr != nil || d <= 0 {
			return s, configErr(path+".idle_timeout", fault.Validation,
				"idle_timeout %q must be a Go duration greater than 0", idle)
		}
		s.IdleTimeout = d
	}
	ints := []struct {
		key    string
		out    *int
		lo, hi int64 // hi 0: no upper bound
	}{
		{"sink_buffer", &s.SinkBuffer, 1, MaxSinkBuffer},
		{"delivery_concurrency", &s.DeliveryConcurrency, 1, MaxDeliveryConcurrency},
		{"speculative_buffer_events", &s.SpeculativeBufferEvents, 1, MaxSpeculativeBufferEvents},
		{"speculative_buffer_bytes", &s.SpeculativeBufferBytes, 1, MaxSpeculativeBufferBytes},
		{"max_sessions", &s.MaxSessions, 1, 0},
	}
	for _, f := range ints {
		var v flexInt
		ok, err := field(m, path, f.key, &v)
		if err != nil || !ok {
			if err != nil {
				return s, err
			}
			continue
		}
		switch {
		case f.hi == 0 && int64(v) < f.lo:
			return s, configErr(path+"."+f.key, fault.Validation, "%s must be > 0, got %d", f.key, v)
		case f.hi > 0 && (int64(v) < f.lo || int64(v) > f.hi):
			return s, configErr(path+"."+f.key, fault.Validation, "%s must be in [%d, %d], got %d", f.key, f.lo, f.hi, v)
		case int64(int(v)) != int64(v):
			return s, configErr(path+"."+f.key, fault.Validation, "%s is too large: %d", f.key, v)
		}
		*f.out = int(v)
	}
	var resume flexBool
	if _, err := field(m, path, "resume", &resume); err != nil {
		return s, err
	}
	s.Resume = bool(resume)
	return s, nil
}

func decodeCatalog(raw json.RawMessage) (*DynamicCatalog, error) {
	if raw == nil {
		return nil, nil
	}
	const path = "runtime.dynamic_catalog"
	m, err := object(raw, path, "tools")
	if err != nil {
		return nil, err
	}
	var tools map[string]string
	if _, err := field(m, path, "tools", &tools); err != nil {
		return nil, err
	}
	if len(tools) == 0 {
		return nil, configErr(path+".tools", fault.Validation, "dynamic_catalog.tools must not be empty")
	}
	out := &DynamicCatalog{Tools: make(map[string]string, len(tools))}
	for _, k := range sortedKeys(tools) {
		v := strings.TrimSpace(tools[k])
		if strings.TrimSpace(k) == "" {
			return nil, configErr(path+".tools", fault.Validation, "an agent key is blank")
		}
		if v == "" {
			return nil, configErr(path+".tools."+k, fault.Validation, "the resource name for %q is blank", k)
		}
		out.Tools[strings.TrimSpace(k)] = v
	}
	return out, nil
}
