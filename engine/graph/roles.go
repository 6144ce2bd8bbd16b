package graph

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
)

// RoleKind is what a read or write role names on the board.
type RoleKind string

// The role kinds.
const (
	RoleVar      RoleKind = "var"      // a board var
	RoleMessages RoleKind = "messages" // a message channel
)

// Role is a static read or write role of a node type (REF 5.3.4):
// the board var or message channel a node reads or writes. Exactly one of
// Name (the var or channel itself) and ConfigKey (a top-level key of the
// node's config whose value is the name) is set.
type Role struct {
	Kind      RoleKind `json:"kind"`
	Name      string   `json:"name,omitempty"`
	ConfigKey string   `json:"config_key,omitempty"`
	// Required: a read must be on the board before the node runs, a write
	// after it ran. A role through an absent config key is then an error.
	Required bool `json:"required,omitempty"`
}

// String names the role as messages show it: var "x", messages "chat"
// (config.channel).
func (r Role) String() string {
	if r.ConfigKey != "" {
		return fmt.Sprintf("%s role (config.%s)", r.Kind, r.ConfigKey)
	}
	return fmt.Sprintf("%s role %q", r.Kind, r.Name)
}

// validateRoles checks the shape of declared roles; where is "reads" or
// "writes".
func validateRoles(where string, roles []Role) error {
	for i, r := range roles {
		at := fmt.Sprintf("%s[%d]", where, i)
		switch {
		case r.Kind != RoleVar && r.Kind != RoleMessages:
			return fault.New(fault.Validation, "", "%s.kind: %q is not %s or %s", at, r.Kind, RoleVar, RoleMessages)
		case (r.Name == "") == (r.ConfigKey == ""):
			return fault.New(fault.Validation, "", "%s: exactly one of name and config_key is required", at)
		case strings.TrimSpace(r.Name) != r.Name || strings.TrimSpace(r.ConfigKey) != r.ConfigKey:
			return fault.New(fault.Validation, "", "%s: a name or config_key must not have surrounding spaces", at)
		}
	}
	return nil
}

// BoundRole is a role resolved for one node: the var or channel it names.
type BoundRole struct {
	Kind     RoleKind
	Name     string
	Required bool
	// From says where the name came from: the role's name, or config.<key>.
	From string
}

func (r BoundRole) String() string {
	if r.From != "" {
		return fmt.Sprintf("%s %q (%s)", r.Kind, r.Name, r.From)
	}
	return fmt.Sprintf("%s %q", r.Kind, r.Name)
}

// NodeRoles are the roles of one node, resolved at Build.
type NodeRoles struct {
	Reads, Writes []BoundRole
}

// RoleHandler is a Handler with static read and write roles. The engine
// checks the reads before the node runs (after its config is resolved and
// before step start) and the writes after it ran (REF 5.2.3 steps 3
// and 6): a required read must be on the board, a required write must be
// on the board afterwards, and the node may change no var or channel its
// writes do not name. Handlers that are not RoleHandlers are unrestricted.
type RoleHandler interface {
	Handler
	Roles() NodeRoles
}

// BindRoles resolves declared roles against a node's config: a role with
// a name keeps it; a role with a config_key takes the string at that key of
// config. The key must hold a non-empty literal string (a ${board}
// reference is not static); an absent key drops an optional role and fails
// a required one. Errors are Validation and name the role.
func BindRoles(config map[string]any, reads, writes []Role) (NodeRoles, error) {
	var out NodeRoles
	var err error
	if out.Reads, err = bindRoles("reads", config, reads); err != nil {
		return NodeRoles{}, err
	}
	if out.Writes, err = bindRoles("writes", config, writes); err != nil {
		return NodeRoles{}, err
	}
	return out, nil
}

func bindRoles(where string, config map[string]any, roles []Role) ([]BoundRole, error) {
	if err := validateRoles(where, roles); err != nil {
		return nil, err
	}
	out := make([]BoundRole, 0, len(roles))
	for i, r := range roles {
		b := BoundRole{Kind: r.Kind, Name: r.Name, Required: r.Required}
		if r.ConfigKey != "" {
			b.From = "config." + r.ConfigKey
			v, ok := config[r.ConfigKey]
			if !ok || v == nil {
				if r.Required {
					return nil, fault.New(fault.Validation, "", "%s[%d]: required %s: config.%s is missing", where, i, r.Kind, r.ConfigKey)
				}
				continue
			}
			s, isString := v.(string)
			switch {
			case !isString || strings.TrimSpace(s) == "":
				return nil, fault.New(fault.Validation, "", "%s[%d]: config.%s must name a %s with a non-empty string, got %s", where, i, r.ConfigKey, r.Kind, valueKind(v))
			case strings.Contains(s, "${"):
				return nil, fault.New(fault.Validation, "", "%s[%d]: config.%s must be a literal %s name, not a board reference", where, i, r.ConfigKey, r.Kind)
			}
			b.Name = s
		}
		out = append(out, b)
	}
	return out, nil
}

// checkReads checks a node's required reads on board (REF 5.2.3
// step 3): a var is there when the board has the key, a channel when it
// holds at least one message.
func checkReads(node string, roles NodeRoles, board *agent.Board) error {
	for _, r := range roles.Reads {
		if r.Required && !onBoard(r, board) {
			return fault.New(fault.Validation, "check read roles", "node %q: required read %s is not on the board", node, r)
		}
	}
	return nil
}

// checkWrites checks a node's writes after it ran (REF 5.2.3 step
// 6): every var or channel that changed against before must be a declared
// write, and every required write must be on the board.
func checkWrites(node string, roles NodeRoles, before, after *agent.Board) error {
	declared := map[RoleKind]map[string]bool{RoleVar: {}, RoleMessages: {}}
	for _, r := range roles.Writes {
		declared[r.Kind][r.Name] = true
	}
	if name, ok := undeclaredChange(before.Vars, after.Vars, declared[RoleVar]); ok {
		return fault.New(fault.Validation, "check write roles", "node %q: wrote var %q, which its writes do not declare", node, name)
	}
	if name, ok := undeclaredChange(before.Channels, after.Channels, declared[RoleMessages]); ok {
		return fault.New(fault.Validation, "check write roles", "node %q: wrote messages %q, which its writes do not declare", node, name)
	}
	for _, r := range roles.Writes {
		if r.Required && !onBoard(r, after) {
			return fault.New(fault.Validation, "check write roles", "node %q: required write %s is not on the board", node, r)
		}
	}
	return nil
}

// undeclaredChange returns the first name, in sorted order, that was added,
// removed or changed between before and after and is not allowed.
func undeclaredChange[V any](before, after map[string]V, allowed map[string]bool) (string, bool) {
	names := slices.Sorted(maps.Keys(after))
	for k := range before {
		if _, ok := after[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		if allowed[k] {
			continue
		}
		b, inBefore := before[k]
		a, inAfter := after[k]
		if inBefore != inAfter || !reflect.DeepEqual(b, a) {
			return k, true
		}
	}
	return "", false
}

// onBoard reports whether the var or channel of r is on board.
func onBoard(r BoundRole, board *agent.Board) bool {
	if r.Kind == RoleVar {
		_, ok := board.Vars[r.Name]
		return ok
	}
	return len(board.Channels[r.Name]) > 0
}

// valueKind names the JSON kind of a decoded config value.
func valueKind(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	return jsonKind(raw)
}
