package graph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/sandbox"
)

// fakeRuntime is a sandbox.Runtime for executor tests. Eval understands a
// small expression language (identifiers, dotted paths, literals, ! && ||
// == === != !== < <= > >=, parentheses) and the engine's syntax probe; a
// missing var reads as null, and the identifier explode fails.
// Invoke runs a Go function registered under the script's source, or else
// interprets the source as lines of commands (see run).
type fakeRuntime struct {
	mu    sync.Mutex
	funcs map[string]func(ctx context.Context, inv sandbox.Invocation) error
	invs  []sandbox.Invocation
	evals []sandbox.Evaluation
}

var _ sandbox.Runtime = (*fakeRuntime)(nil)

func newFake() *fakeRuntime {
	return &fakeRuntime{funcs: map[string]func(context.Context, sandbox.Invocation) error{}}
}

// on registers fn as the script whose source is name.
func (f *fakeRuntime) on(name string, fn func(ctx context.Context, inv sandbox.Invocation) error) *fakeRuntime {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.funcs[name] = fn
	return f
}

func (f *fakeRuntime) invocations() []sandbox.Invocation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sandbox.Invocation(nil), f.invs...)
}

func (f *fakeRuntime) Name() string { return "fake" }

// Invoke hands the script function, or the commands, a copy of the board
// to write as they like, and returns what changed on it as the call's
// writes, so that the board handed in is never written.
func (f *fakeRuntime) Invoke(ctx context.Context, inv sandbox.Invocation) (sandbox.Outcome, error) {
	f.mu.Lock()
	f.invs = append(f.invs, inv)
	fn := f.funcs[inv.Script.Source]
	f.mu.Unlock()
	base := inv.Board
	inv.Board = *base.Clone()
	err := f.run(ctx, fn, inv)
	return sandbox.Outcome{Writes: boardDiff(base, inv.Board)}, err
}

func (f *fakeRuntime) run(ctx context.Context, fn func(context.Context, sandbox.Invocation) error, inv sandbox.Invocation) error {
	if fn != nil {
		return fn(ctx, inv)
	}
	for _, line := range strings.Split(inv.Script.Source, "\n") {
		if err := runLine(ctx, inv, strings.TrimSpace(line)); err != nil {
			return err
		}
	}
	return nil
}

// boardDiff returns the writes that make before into after: the vars and
// channels that changed, in the order of their names.
func boardDiff(before, after agent.Board) sandbox.Writes {
	var ws sandbox.Writes
	for _, name := range slices.Sorted(maps.Keys(before.Vars)) {
		if _, ok := after.Vars[name]; !ok {
			ws = append(ws, sandbox.Write{Op: sandbox.DeleteVar, Name: name})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after.Vars)) {
		if old, ok := before.Vars[name]; !ok || !reflect.DeepEqual(old, after.Vars[name]) {
			ws = append(ws, sandbox.Write{Op: sandbox.SetVar, Name: name, Value: after.Vars[name]})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after.Channels)) {
		if old, ok := before.Channels[name]; !ok || !reflect.DeepEqual(old, after.Channels[name]) {
			msgs := after.Channels[name]
			if msgs == nil {
				msgs = []message.Message{}
			}
			ws = append(ws, sandbox.Write{Op: sandbox.SetChannel, Name: name, Messages: msgs})
		}
	}
	return ws
}

// runLine runs one command of the script language:
//
//	set KEY JSON        board var KEY = JSON
//	incr KEY            board var KEY += 1
//	delete KEY          remove board var KEY
//	copy KEY CFG        board var KEY = config[CFG]
//	say TEXT            append an assistant message to the main channel
//	emit TYPE JSON      host.emit(TYPE, JSON)
//	check               host.checkInterrupt(); an interrupt stops the script
//	cancel NODE         parallel.cancelNode(NODE, "lost")
//	fail KIND MESSAGE   stop with an error of KIND
func runLine(ctx context.Context, inv sandbox.Invocation, line string) error {
	cmd, rest, _ := strings.Cut(line, " ")
	arg, val, _ := strings.Cut(rest, " ")
	switch cmd {
	case "", "#":
		return nil
	case "set":
		var v any
		if err := json.Unmarshal([]byte(val), &v); err != nil {
			return fault.New(fault.Validation, "fake", "set %s: %v", arg, err)
		}
		inv.Board.Vars[arg] = v
	case "incr":
		n, _ := inv.Board.Vars[arg].(float64)
		inv.Board.Vars[arg] = n + 1
	case "delete":
		delete(inv.Board.Vars, arg)
	case "copy":
		inv.Board.Vars[arg] = inv.Config[val]
	case "say":
		inv.Board.Append(agent.MainChannel, message.NewTextMessage(message.RoleAssistant, rest))
	case "emit":
		_, err := inv.ABI.Call(ctx, "emit", json.RawMessage(fmt.Sprintf("[%q,%s]", arg, val)))
		return err
	case "check":
		res, err := inv.ABI.Call(ctx, "checkInterrupt", nil)
		if err != nil || string(res) == "null" {
			return err
		}
		var intr agent.Interrupt
		_ = json.Unmarshal(res, &intr)
		return agent.Interrupted(intr)
	case "cancel":
		if inv.Parallel == nil || !inv.Parallel(arg, "lost") {
			return fault.New(fault.Internal, "fake", "cancel %s refused", arg)
		}
	case "fail":
		k, ok := fault.ParseKind(arg)
		if !ok {
			k = fault.Internal
		}
		return fault.New(k, "fake script", "node %q: %s", inv.Node, val)
	default:
		return fault.New(fault.Validation, "fake", "unknown command %q", cmd)
	}
	return nil
}

const (
	probePrefix = "typeof (() => (\n"
	probeSuffix = "\n))"
)

func (f *fakeRuntime) Eval(_ context.Context, ev sandbox.Evaluation) (any, error) {
	f.mu.Lock()
	f.evals = append(f.evals, ev)
	f.mu.Unlock()
	expr, probe := ev.Expr, false
	if inner, ok := strings.CutPrefix(expr, probePrefix); ok {
		if inner, ok = strings.CutSuffix(inner, probeSuffix); ok {
			expr, probe = inner, true
		}
	}
	p := &parser{toks: tokenize(expr)}
	n, err := p.parse()
	if err != nil {
		return nil, fault.New(fault.Validation, "eval", "%s: SyntaxError: %v", ev.Node, err)
	}
	if probe {
		return "function", nil
	}
	return n(ev.Vars)
}

type evalFn func(vars map[string]any) (any, error)

type parser struct {
	toks []string
	pos  int
}

func tokenize(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '"' || c == '\'':
			j := strings.IndexRune(s[i+1:], c)
			if j < 0 {
				return append(out, "\x00unterminated")
			}
			out = append(out, s[i:i+j+2])
			i += j + 2
		case unicode.IsLetter(c) || c == '_' || unicode.IsDigit(c):
			j := i
			for j < len(s) && (unicode.IsLetter(rune(s[j])) || unicode.IsDigit(rune(s[j])) || s[j] == '_' || s[j] == '.') {
				j++
			}
			out = append(out, s[i:j])
			i = j
		default:
			op := string(c)
			for _, o := range []string{"===", "!==", "==", "!=", "<=", ">=", "&&", "||"} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			out = append(out, op)
			i += len(op)
		}
	}
	return out
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *parser) parse() (evalFn, error) {
	n, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.peek())
	}
	return n, nil
}

var precedence = map[string]int{"||": 1, "&&": 2, "==": 3, "===": 3, "!=": 3, "!==": 3, "<": 4, "<=": 4, ">": 4, ">=": 4}

func (p *parser) binary(min int) (evalFn, error) {
	left, err := p.unary()
	if err != nil {
		return nil, err
	}
	for {
		op := p.peek()
		prec, ok := precedence[op]
		if !ok || prec <= min {
			return left, nil
		}
		p.pos++
		right, err := p.binary(prec)
		if err != nil {
			return nil, err
		}
		left = combine(op, left, right)
	}
}

func (p *parser) unary() (evalFn, error) {
	switch t := p.peek(); {
	case t == "":
		return nil, fmt.Errorf("unexpected end")
	case t == "!":
		p.pos++
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return func(v map[string]any) (any, error) {
			a, err := x(v)
			return !truthy(a), err
		}, nil
	case t == "(":
		p.pos++
		x, err := p.binary(0)
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.pos++
		return x, nil
	default:
		p.pos++
		return atom(t)
	}
}

func atom(t string) (evalFn, error) {
	switch {
	case t == "true" || t == "false":
		return func(map[string]any) (any, error) { return t == "true", nil }, nil
	case t == "null":
		return func(map[string]any) (any, error) { return nil, nil }, nil
	case t[0] == '"' || t[0] == '\'':
		s := t[1 : len(t)-1]
		return func(map[string]any) (any, error) { return s, nil }, nil
	case unicode.IsDigit(rune(t[0])):
		n, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, err
		}
		return func(map[string]any) (any, error) { return n, nil }, nil
	case unicode.IsLetter(rune(t[0])) || t[0] == '_':
		return func(vars map[string]any) (any, error) {
			head, rest, _ := strings.Cut(t, ".")
			if head == "explode" {
				return nil, fault.New(fault.Internal, "eval", "TypeError: explode is not a function")
			}
			v := vars[head] // a missing var reads as undefined (nil), as in the js runtime
			for rest != "" {
				var seg string
				seg, rest, _ = strings.Cut(rest, ".")
				m, _ := v.(map[string]any)
				v = m[seg]
			}
			return v, nil
		}, nil
	}
	return nil, fmt.Errorf("unexpected %q", t)
}

func combine(op string, l, r evalFn) evalFn {
	return func(vars map[string]any) (any, error) {
		a, err := l(vars)
		if err != nil {
			return nil, err
		}
		switch op {
		case "&&":
			if !truthy(a) {
				return a, nil
			}
			return r(vars)
		case "||":
			if truthy(a) {
				return a, nil
			}
			return r(vars)
		}
		b, err := r(vars)
		if err != nil {
			return nil, err
		}
		switch op {
		case "==", "===":
			return equal(a, b), nil
		case "!=", "!==":
			return !equal(a, b), nil
		}
		x, y := number(a), number(b)
		switch op {
		case "<":
			return x < y, nil
		case "<=":
			return x <= y, nil
		case ">":
			return x > y, nil
		}
		return x >= y, nil
	}
}

func truthy(v any) bool {
	switch t := v.(type) {
	case nil:
		return false
	case bool:
		return t
	case string:
		return t != ""
	}
	return number(v) != 0
}

func number(v any) float64 {
	switch t := v.(type) {
	case float64:
		return t
	case int:
		return float64(t)
	case int64:
		return float64(t)
	case json.Number:
		f, _ := t.Float64()
		return f
	}
	return 0
}

func equal(a, b any) bool {
	switch a.(type) {
	case float64, int, int64, json.Number:
		return number(a) == number(b)
	}
	return reflect.DeepEqual(a, b)
}
