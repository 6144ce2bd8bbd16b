package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
)

// The syntax probe wraps a condition in an arrow function that is never
// called, so that Build can have the runtime compile it without running
// it: the probe evaluates to the string "function".
const (
	probePrefix = "typeof (() => (\n"
	probeSuffix = "\n))"
)

// condition is a compiled edge condition or skip condition.
type condition struct {
	expr  string
	path  string // "edges[3].condition" or "nodes[1].skip_condition"
	where string // "edge a -> b" or "node \"x\"", for messages
	owner string // "a -> b" or "x": Evaluation.Node
	rt    sandbox.Runtime
}

// newCondition checks expr's syntax through rt (REF 5.1.5): the
// runtime compiles the probe, which runs none of expr. A nil rt is a build
// error naming the place.
func newCondition(ctx context.Context, expr, path, where, owner string, rt sandbox.Runtime, rtName string, limits sandbox.Limits) (*condition, error) {
	if rt == nil {
		return nil, &DocumentError{Op: opBuild, Path: path,
			Msg: fmt.Sprintf("%s: a condition needs script runtime %q, and none is bound", where, rtName)}
	}
	c := &condition{expr: expr, path: path, where: where, owner: owner, rt: rt}
	v, err := rt.Eval(ctx, sandbox.Evaluation{Node: owner, Expr: probePrefix + expr + probeSuffix, Limits: limits})
	if err != nil {
		return nil, &DocumentError{Op: opBuild, Path: path, Msg: where + ": does not compile", Kind: fault.KindOr(err, fault.Validation), Err: err}
	}
	if v != "function" {
		return nil, &DocumentError{Op: opBuild, Path: path, Msg: fmt.Sprintf("%s: is not a single expression", where)}
	}
	return c, nil
}

// eval evaluates the condition over vars; a result that is not a boolean
// is a Validation error naming the place.
func (c *condition) eval(ctx context.Context, vars map[string]any, limits sandbox.Limits, tenant string) (bool, error) {
	v, err := c.rt.Eval(ctx, sandbox.Evaluation{Node: c.owner, Expr: c.expr, Vars: vars, Limits: limits, Tenant: tenant})
	if err != nil {
		return false, fault.Wrap(fault.KindOr(err, fault.Validation), err, "evaluate condition", "%s: %s", c.path, c.where)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fault.New(fault.Validation, "evaluate condition", "%s: %s: %q gave %s, want a boolean",
			c.path, c.where, abbreviate(c.expr), describe(v))
	}
	return b, nil
}

// conditionVars returns what conditions see: the board vars plus
// __iterations, the engine's value winning.
func conditionVars(vars map[string]any, iterations int) map[string]any {
	out := make(map[string]any, len(vars)+1)
	maps.Copy(out, vars)
	out[VarIterations] = iterations
	return out
}

func describe(v any) string {
	if v == nil {
		return "null"
	}
	s := fmt.Sprintf("%v", v)
	return fmt.Sprintf("%T %s", v, abbreviate(s))
}

// refPrefix starts a board reference.
const refPrefix = "${board."

// ResolveString resolves the ${board.path} references in s against vars
// (REF 5.2.6) with sandbox.Resolve, the resolver scripts reach as
// board.resolve, so a node's config and its script agree:
//
//   - the path is dotted; an exact var named "a.b" takes priority over the
//     var "a" walked to its field "b"; the walk goes through maps, arrays
//     (by index) and the JSON fields of Go values;
//   - ${board.x:default} gives default when x is not set; a default that is
//     a JSON literal (3, true, "s", {"a":1}) keeps its type, any other text
//     is a string;
//   - a string that is exactly one reference gives the value with its type;
//     a reference inside other text is replaced by the value, strings as
//     they are and other values as JSON;
//   - \${...} is the literal text ${...}; any other ${...} is left as it is.
//
// A missing var without a default, an empty path or an unclosed "${" is a
// Validation error.
func ResolveString(s string, vars map[string]any) (any, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	if !strings.HasPrefix(s, refPrefix) {
		// Only a string that starts with a reference can be one typed
		// reference; anything else resolves to text.
		return sandbox.ResolveString(vars, s)
	}
	return sandbox.Resolve(vars, s)
}

// ResolveRefs returns a copy of v with every string in it (map values and
// slice elements, at any depth; not map keys) resolved by ResolveString.
// v is not changed.
func ResolveRefs(v any, vars map[string]any) (any, error) {
	switch t := v.(type) {
	case string:
		return ResolveString(t, vars)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			r, err := ResolveRefs(e, vars)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := ResolveRefs(e, vars)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// hasRefs reports whether a string in config, outside its literal keys,
// holds a reference ("${").
func hasRefs(config map[string]any, literal map[string]bool) bool {
	for k, v := range config {
		if !literal[k] && valueHasRefs(v) {
			return true
		}
	}
	return false
}

func valueHasRefs(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, "${")
	case map[string]any:
		for _, e := range t {
			if valueHasRefs(e) {
				return true
			}
		}
	case []any:
		for _, e := range t {
			if valueHasRefs(e) {
				return true
			}
		}
	}
	return false
}

func abbreviate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

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

// maxBoardBytes is the run's max_board_bytes: the smallest of the
// engine's limits and the bound runtimes', else the default. It is
// computed at the run's first wave.
func (r *runState) maxBoardBytes() int64 {
	if r.cache.maxBoard > 0 {
		return r.cache.maxBoard
	}
	l := sandbox.Limits{MaxBoardBytes: r.e.opts.Limits.MaxBoardBytes}
	for _, rt := range r.e.opts.Runtimes {
		if lr, ok := rt.(LimitedRuntime); ok {
			l = l.Tighten(sandbox.Limits{MaxBoardBytes: lr.Limits().MaxBoardBytes})
		}
	}
	r.cache.maxBoard = l.MaxBoardBytes
	if r.cache.maxBoard == 0 {
		r.cache.maxBoard = sandbox.DefaultMaxBoardBytes
	}
	return r.cache.maxBoard
}

// checkBoard refuses a board past max_board_bytes at a wave boundary,
// before the checkpoint: the LimitError names the wave's node, or the
// graph for a wave of several. The board is measured unless the engine
// counted its size from the last node's writes (a script node:
// Writes.ApplyMeasured) or the node was skipped.
func (r *runState) checkBoard(wave []string) error {
	max := r.maxBoardBytes()
	size := r.boardBytes
	r.boardBytes = 0
	if size <= 0 {
		var err error
		if size, err = sandbox.BoardJSONBytes(r.board); err != nil {
			return fault.Wrap(fault.Internal, err, opExecute, "graph %q: measure the board", r.e.doc.Name)
		}
	}
	if size <= max {
		r.boardBytes = size
		return nil
	}
	le := &sandbox.LimitError{Limit: sandbox.LimitBoardBytes, Node: r.e.doc.Name, Max: max}
	if len(wave) == 1 {
		le.Node = wave[0]
	}
	return fault.Wrap(fault.BudgetExceeded, le, opExecute, "graph %q: board of %d bytes after the wave of %s",
		r.e.doc.Name, size, strings.Join(wave, ", "))
}
