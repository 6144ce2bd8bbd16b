package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/resource"
)

// Validate checks the document's own shape without looking up any factory:
// the version is set, every resource has a non-blank name and a kind,
// every agent has a non-blank id and a valid definition, every dependency
// reference is well formed and every settings value is JSON. It returns
// the first problem found, in a stable order (version, resources by name,
// agents by id), as an *Error.
func (d *Document) Validate() error {
	if strings.TrimSpace(d.Version) == "" {
		return d.invalid("", "version", "version is required")
	}
	for _, name := range sortedKeys(d.Resources) {
		if err := d.validateResource(name, d.Resources[name]); err != nil {
			return err
		}
	}
	for _, id := range sortedKeys(d.Agents) {
		path := childPath("agents", id)
		if strings.TrimSpace(id) == "" {
			return d.invalid("agents", path, "agent name is empty")
		}
		if err := d.validateDefinition(path, d.Agents[id]); err != nil {
			return err
		}
	}
	return nil
}

func (d *Document) validateResource(name string, e ResourceEntry) error {
	path := childPath("resources", name)
	switch {
	case strings.TrimSpace(name) == "":
		return d.invalid("resources", path, "resource name is empty")
	case strings.Contains(name, "/"):
		return d.invalid(path, "", "a resource name must not contain '/'")
	case strings.TrimSpace(e.Kind) == "":
		return d.invalid(path, path+".kind", "kind is required")
	}
	if err := d.validateDeps(path+".deps", e.Deps); err != nil {
		return err
	}
	return d.validateSettings(path+".settings", e.Settings)
}

// validateDefinition checks an agent definition; path is agents.<id>.
func (d *Document) validateDefinition(path string, def agent.Definition) error {
	if strings.TrimSpace(def.Card.Name) == "" {
		return d.invalid(path, path+".card.name", "card.name is required")
	}
	for i, s := range def.Card.Skills {
		if strings.TrimSpace(s.ID) == "" {
			p := itemPath(path+".card.skills", i)
			return d.invalid(p, p+".id", "id is required")
		}
	}
	for i, t := range def.Tools {
		if strings.TrimSpace(t) == "" {
			return d.invalid(itemPath(path+".tools", i), "", "tool name is empty")
		}
	}
	if err := d.validateEngine(path+".engine", def.Engine); err != nil {
		return err
	}
	if def.Policy.MaxRevise < 0 {
		return d.invalid(path+".policy", path+".policy.max_revise", "max_revise must be >= 0")
	}
	for i, c := range def.Capabilities {
		if err := agent.ValidateCapabilityName(c); err != nil {
			return d.errorAt(itemPath(path+".capabilities", i), "", plain(err, "capabilities: "))
		}
	}
	for _, slot := range hookSlots() {
		for i, h := range slot.hooks(def) {
			if err := d.validateHook(itemPath(path+"."+slot.field, i), h); err != nil {
				return err
			}
		}
	}
	if err := def.Validate(); err != nil {
		return d.errorAt(path, "", plain(err, ""))
	}
	return nil
}

func (d *Document) validateEngine(path string, e agent.EngineRef) error {
	if e.IsZero() {
		return nil
	}
	if strings.TrimSpace(e.Kind) == "" {
		return d.invalid(path, path+".kind", "kind is required")
	}
	if err := d.validateDeps(path+".deps", e.Deps); err != nil {
		return err
	}
	return d.validateSettings(path+".settings", e.Settings)
}

func (d *Document) validateHook(path string, h agent.HookRef) error {
	if strings.TrimSpace(h.Type) == "" {
		return d.invalid(path, path+".type", "type is required")
	}
	if err := d.validateDeps(path+".deps", h.Deps); err != nil {
		return err
	}
	return d.validateSettings(path+".settings", h.Settings)
}

// validateDeps checks dependency keys and references ("name" or
// "name/item"); path is the deps mapping.
func (d *Document) validateDeps(path string, deps map[string]string) error {
	for _, k := range sortedKeys(deps) {
		p := childPath(path, k)
		if strings.TrimSpace(k) == "" {
			return d.invalid(path, p, "dep name is empty")
		}
		if err := agent.ValidateRef(deps[k]); err != nil {
			return d.errorAt(p, "", plain(err, ""))
		}
	}
	return nil
}

// validateSettings checks that raw is JSON and, when it has the shape of a
// reference, that the reference names something.
func (d *Document) validateSettings(path string, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if !json.Valid(raw) {
		return d.invalid(path, "", "settings are not valid JSON")
	}
	if key, bad := malformedSource(raw); bad {
		return d.invalid(path, childPath(path, key), "a {%s: …} reference needs a non-empty string", key)
	}
	return nil
}

// malformedSource reports a settings value that is a one-key object with
// key file or embed whose value is not a non-empty string.
func malformedSource(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return "", false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) != 1 {
		return "", false
	}
	for k := range m {
		if k != "file" && k != "embed" {
			return "", false
		}
		_, ok := resource.SourceOf(raw)
		return k, !ok
	}
	return "", false
}

// plain returns a Validation error with err's message, less the operation
// prefix that a lower package put there and the given redundant prefix.
func plain(err error, prefix string) error {
	msg := err.Error()
	var fe *fault.Error
	if errors.As(err, &fe) && fe.Err == nil {
		msg = fe.Msg
	}
	kind := fault.KindOf(err)
	if kind == nil {
		kind = fault.Validation
	}
	return fault.New(kind, "", "%s", strings.TrimPrefix(msg, prefix))
}

// hookSlot ties a hook slot to its field in the document.
type hookSlot struct {
	slot  string // the slot, as in the factory kind hook.<slot>
	field string // the document field
	hooks func(agent.Definition) []agent.HookRef
}

// hookSlots lists the hook slots in the order a run uses them.
func hookSlots() []hookSlot {
	return []hookSlot{
		{agent.SlotPrepare, "prepare", func(d agent.Definition) []agent.HookRef { return d.Prepare }},
		{agent.SlotObserve, "observe", func(d agent.Definition) []agent.HookRef { return d.Observe }},
		{agent.SlotReferee, "referees", func(d agent.Definition) []agent.HookRef { return d.Referees }},
		{agent.SlotCommit, "commit", func(d agent.Definition) []agent.HookRef { return d.Commit }},
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
