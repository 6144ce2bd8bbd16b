package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
)

// Bounds of the runtime.sessions keys a document may set (REF 1.2.7); the
// defaults are session.DefaultTunables. max_sessions and idle_timeout only
// need to be positive.
const (
	MaxSinkBuffer              = 1 << 20
	MaxDeliveryConcurrency     = 1024
	MaxSpeculativeBufferEvents = 1 << 20
	MaxSpeculativeBufferBytes  = 256 << 20
)

// Config is the decoded runtime: section of a deployment document.
type Config struct {
	// EventBus is the resource name of the event.Bus; required.
	EventBus string `json:"event_bus"`
	// CheckpointStore is the resource name of the agent.CheckpointStore;
	// "" disables checkpointing.
	CheckpointStore string `json:"checkpoint_store"`
	// ExternalDeps are the caller-owned values the document consumes.
	ExternalDeps []ExternalDependency `json:"external_deps"`
	// Sessions tunes the session manager.
	Sessions SessionsConfig `json:"sessions"`
	// DynamicCatalog is nil when the section is absent.
	DynamicCatalog *DynamicCatalog `json:"dynamic_catalog"`
	// Tenants declares the tenants agents may name (agents.<id>.tenant)
	// and their quotas (session.Quotas; a zero quota is no bound). An agent
	// naming no tenant belongs to agent.DefaultTenant, which needs no
	// declaration.
	Tenants map[string]session.Quotas `json:"tenants"`
}

// SessionsConfig is the sessions: subsection. Its keys are those of
// session.Tunables (idle_timeout, max_sessions, sink_buffer,
// delivery_concurrency, speculative_buffer_events,
// speculative_buffer_bytes), whose defaults are session.DefaultTunables,
// and resume.
type SessionsConfig struct {
	session.Tunables
	// Resume keeps durable session state; it requires checkpoint_store.
	Resume bool `json:"resume"`
}

// DynamicCatalog maps agent ids (or "default") to tool.Assembly resources.
type DynamicCatalog struct {
	Tools map[string]string `json:"tools"`
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

// DecodeConfig decodes the runtime: subtree strictly (REF 1.1): expand
// is applied to every string scalar first (nil expands nothing), then the
// subtree is decoded by the rules of the rest of the document
// (deploy.DecodeSection: unknown keys are errors; integer and boolean
// fields also take a string, so that ${env:NAME} can feed them), defaults
// are filled in and every bound is checked. Errors are *ConfigError values
// naming the key (an unknown key is named by its parent, as elsewhere in a
// document); their kind is Validation. An absent section (nil or null) is a
// Validation error.
func DecodeConfig(raw json.RawMessage, expand func(string) (string, error)) (Config, error) {
	cfg, err := decodeConfig(nil, raw, expand)
	var de *deploy.Error
	if errors.As(err, &de) {
		err = &ConfigError{Path: de.Path, Err: de.Err}
	}
	return cfg, err
}

// decodeConfig is DecodeConfig for the runtime section of doc (nil: none):
// a decode error is a *deploy.Error placed in doc, a broken rule a
// *ConfigError.
func decodeConfig(doc *deploy.Document, raw json.RawMessage, expand func(string) (string, error)) (Config, error) {
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
	cfg := Config{Sessions: SessionsConfig{Tunables: session.DefaultTunables()}}
	if err := deploy.DecodeSection(doc, "runtime", raw, &cfg); err != nil {
		return Config{}, err
	}
	if err := cfg.normalize(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// normalize trims the names and applies the decode-time rules
// (REF 1.2.1–1.2.8).
func (cfg *Config) normalize() error {
	cfg.EventBus = strings.TrimSpace(cfg.EventBus)
	cfg.CheckpointStore = strings.TrimSpace(cfg.CheckpointStore)
	if cfg.EventBus == "" {
		return configErr("runtime.event_bus", fault.Validation, "event_bus is required")
	}
	var err error
	if cfg.ExternalDeps, err = normalizeExternalDeps(cfg.ExternalDeps); err != nil {
		return err
	}
	if err := cfg.Sessions.check(); err != nil {
		return err
	}
	if cfg.Sessions.Resume && cfg.CheckpointStore == "" {
		return configErr("runtime.sessions.resume", fault.Validation, "sessions.resume requires checkpoint_store")
	}
	if cfg.DynamicCatalog, err = normalizeCatalog(cfg.DynamicCatalog); err != nil {
		return err
	}
	return checkTenants(cfg.Tenants)
}

// checkTenants refuses a blank tenant id and a negative quota.
func checkTenants(tenants map[string]session.Quotas) error {
	for _, id := range sortedKeys(tenants) {
		path := "runtime.tenants." + id
		if strings.TrimSpace(id) == "" || strings.TrimSpace(id) != id {
			return configErr("runtime.tenants", fault.Validation, "tenant id %q must be non-empty without surrounding spaces", id)
		}
		if key := tenants[id].InvalidKey(); key != "" {
			return &ConfigError{Path: path + "." + key, Err: tenants[id].Validate()}
		}
	}
	return nil
}

// checkAgentTenants refuses an agent that names a tenant the runtime
// section does not declare.
func checkAgentTenants(doc *deploy.Document, cfg Config) error {
	for _, id := range sortedKeys(doc.Agents) {
		if err := checkTenant(cfg, doc.Agents[id].Tenant); err != nil {
			return placeConfigErr(doc, &ConfigError{Path: "agents." + id + ".tenant", Err: err})
		}
	}
	return nil
}

// checkTenant refuses a tenant the runtime section does not declare.
func checkTenant(cfg Config, tenant string) error {
	if tenant == "" || tenant == agent.DefaultTenant {
		return nil
	}
	if _, ok := cfg.Tenants[tenant]; !ok {
		return fault.New(fault.Validation, "", "tenant %q is not declared in runtime.tenants (declared: %s)",
			tenant, strings.Join(sortedKeys(cfg.Tenants), ", "))
	}
	return nil
}

// check applies the bounds of the sessions keys (REF 1.2.7).
func (s SessionsConfig) check() error {
	const path = "runtime.sessions"
	if s.IdleTimeout <= 0 {
		return configErr(path+".idle_timeout", fault.Validation,
			"idle_timeout %q must be a Go duration greater than 0", s.IdleTimeout.String())
	}
	for _, f := range []struct {
		key string
		v   int
		hi  int // 0: no upper bound
	}{
		{"sink_buffer", s.SinkBuffer, MaxSinkBuffer},
		{"delivery_concurrency", s.DeliveryConcurrency, MaxDeliveryConcurrency},
		{"speculative_buffer_events", s.SpeculativeBufferEvents, MaxSpeculativeBufferEvents},
		{"speculative_buffer_bytes", s.SpeculativeBufferBytes, MaxSpeculativeBufferBytes},
		{"max_sessions", s.MaxSessions, 0},
	} {
		switch {
		case f.hi == 0 && f.v < 1:
			return configErr(path+"."+f.key, fault.Validation, "%s must be > 0, got %d", f.key, f.v)
		case f.hi > 0 && (f.v < 1 || f.v > f.hi):
			return configErr(path+"."+f.key, fault.Validation, "%s must be in [1, %d], got %d", f.key, f.hi, f.v)
		}
	}
	return nil
}

// normalizeCatalog trims the dynamic_catalog.tools entries and refuses an
// empty map, a blank key and a blank resource name (REF 1.2.8).
func normalizeCatalog(cat *DynamicCatalog) (*DynamicCatalog, error) {
	if cat == nil {
		return nil, nil
	}
	const path = "runtime.dynamic_catalog"
	tools := cat.Tools
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
