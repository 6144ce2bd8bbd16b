package agent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
)

// Definition describes an agent: its card, its engine, its hooks and the
// host capabilities its scripts are granted.
type Definition struct {
	Card AgentCard `json:"card"`
	// Tenant names the tenant the agent belongs to: its quotas bound the
	// agent's sessions and turns, and its scripts never share a worker, a
	// VM or a journal with another tenant's. "": DefaultTenant.
	Tenant       string    `json:"tenant,omitempty"`
	Tools        []string  `json:"tools,omitempty"`
	Engine       EngineRef `json:"engine"`
	Policy       Policy    `json:"policy,omitzero"`
	Capabilities []string  `json:"capabilities,omitempty"`
	Prepare      []HookRef `json:"prepare,omitempty"`
	Observe      []HookRef `json:"observe,omitempty"`
	Referees     []HookRef `json:"referees,omitempty"`
	Commit       []HookRef `json:"commit,omitempty"`
}

// DefaultTenant is the tenant of an agent whose definition names none.
const DefaultTenant = "default"

// TenantID returns the tenant the agent belongs to: Tenant, or
// DefaultTenant.
func (d Definition) TenantID() string {
	if d.Tenant == "" {
		return DefaultTenant
	}
	return d.Tenant
}

// AgentCard is what an agent tells about itself.
type AgentCard struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Version     string  `json:"version,omitempty"`
	Skills      []Skill `json:"skills,omitempty"`
}

// Skill is one thing an agent can do.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// EngineRef names the factory that builds an agent's engine.
type EngineRef struct {
	Kind     string            `json:"kind,omitempty"`
	Impl     string            `json:"impl,omitempty"`
	Deps     map[string]string `json:"deps,omitempty"`
	Settings json.RawMessage   `json:"settings,omitempty"`
}

// IsZero reports whether no engine field is set.
func (e EngineRef) IsZero() bool {
	return e.Kind == "" && e.Impl == "" && len(e.Deps) == 0 && len(e.Settings) == 0
}

// Policy tunes the agent layer around the engine.
type Policy struct {
	MaxRevise        int      `json:"max_revise,omitempty"`
	ArtifactChannels []string `json:"artifact_channels,omitempty"`
}

// HookRef names a hook factory (kind "hook.<slot>", impl Type).
type HookRef struct {
	Type     string            `json:"type"`
	Deps     map[string]string `json:"deps,omitempty"`
	Settings json.RawMessage   `json:"settings,omitempty"`
}

// The hook slots, in the order Execute runs them.
const (
	SlotPrepare = "prepare"
	SlotObserve = "observe"
	SlotReferee = "referee"
	SlotCommit  = "commit"
)

// Hooks returns the definition's hooks by slot.
func (d Definition) Hooks() map[string][]HookRef {
	return map[string][]HookRef{SlotPrepare: d.Prepare, SlotObserve: d.Observe, SlotReferee: d.Referees, SlotCommit: d.Commit}
}

// Validate checks the definition's own shape; it resolves no factory. It
// reports the first problem as a Validation error that names the field
// (card.name, card.skills[0].id, engine.kind, engine.deps.store,
// policy.max_revise, referees[1]: hook: type). The checks: card.name and
// every skill id are non-blank; engine.kind is set when any engine field is;
// deps are valid references (ValidateRef); settings are valid JSON;
// policy.max_revise is not negative; every capability is known
// (ValidateCapabilityName); every hook has a non-blank type.
func (d Definition) Validate() error {
	if strings.TrimSpace(d.Card.Name) == "" {
		return invalidDef("card.name is required")
	}
	for i, s := range d.Card.Skills {
		if strings.TrimSpace(s.ID) == "" {
			return invalidDef("card.skills[%d].id is required", i)
		}
	}
	if !d.Engine.IsZero() && strings.TrimSpace(d.Engine.Kind) == "" {
		return invalidDef("engine.kind is required")
	}
	if err := ValidateRefs("engine.deps", d.Engine.Deps); err != nil {
		return err
	}
	if len(d.Engine.Settings) > 0 && !json.Valid(d.Engine.Settings) {
		return invalidDef("engine.settings is not valid JSON")
	}
	if d.Policy.MaxRevise < 0 {
		return invalidDef("policy.max_revise must be >= 0")
	}
	for _, c := range d.Capabilities {
		if err := ValidateCapabilityName(c); err != nil {
			return err
		}
	}
	for _, slot := range []struct {
		name  string
		hooks []HookRef
	}{{"prepare", d.Prepare}, {"observe", d.Observe}, {"referees", d.Referees}, {"commit", d.Commit}} {
		for i, h := range slot.hooks {
			if strings.TrimSpace(h.Type) == "" {
				return invalidDef("%s[%d]: hook: type is required", slot.name, i)
			}
			if err := ValidateRefs(fmt.Sprintf("%s[%d].deps", slot.name, i), h.Deps); err != nil {
				return err
			}
			if len(h.Settings) > 0 && !json.Valid(h.Settings) {
				return invalidDef("%s[%d].settings is not valid JSON", slot.name, i)
			}
		}
	}
	return nil
}

// ValidateRefs checks a deps map: every dep name is non-blank and every
// reference passes ValidateRef. Keys are checked in sorted order, so the
// first error is stable; it names field and the dep (engine.deps.store).
func ValidateRefs(field string, deps map[string]string) error {
	keys := make([]string, 0, len(deps))
	for k := range deps {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if strings.TrimSpace(k) == "" {
			return invalidDef("%s: dep name is empty", field)
		}
		if err := ValidateRef(deps[k]); err != nil {
			return invalidDef("%s.%s: %v", field, k, err)
		}
	}
	return nil
}

// ValidateRef checks one dependency reference: "resource" or
// "resource/item", non-blank, without surrounding whitespace, with at most
// one '/' that neither leads nor trails. The error is of kind Validation.
func ValidateRef(ref string) error {
	switch {
	case strings.TrimSpace(ref) == "":
		return fault.New(fault.Validation, "", "reference is empty")
	case strings.TrimSpace(ref) != ref:
		return fault.New(fault.Validation, "", "reference %q has surrounding whitespace", ref)
	case strings.Count(ref, "/") > 1:
		return fault.New(fault.Validation, "", "reference %q has more than one '/'", ref)
	case strings.HasPrefix(ref, "/") || strings.HasSuffix(ref, "/"):
		return fault.New(fault.Validation, "", "reference %q has a leading or trailing '/'", ref)
	}
	return nil
}

func invalidDef(format string, args ...any) error {
	return fault.New(fault.Validation, "agent", format, args...)
}
