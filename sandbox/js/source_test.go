package js_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/sandbox"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/corral-rt/corral/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subtestChildEnv makes the test binary run the case named in -test.run itself:
// a case that would overflow the Go stack kills the process that runs it,
// so the parent runs each in a child and a crash fails one test.
const subtestChildEnv = "JS_SANDBOX_CHILD"

// inSubtestChild runs t (a subtest) in a child process of the test binary, and
// reports whether this process is that child.
func inSubtestChild(t *testing.T) bool {
	t.Helper()
	if os.Getenv(subtestChildEnv) != "" {
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), subtestChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child process failed:\n%s", tail(string(out)))
	require.Contains(t, string(out), "--- PASS: "+parts[0][1:len(parts[0])-1], "the child ran no test:\n%s", tail(string(out)))
	return false
}

// deep is n levels of open, a middle, and n of close.
func deep(open, mid, close string, n int) string {
	return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
}

// sourceAttack is a source that would take goja's parser or compiler, or
// regexp2's, deep enough to overflow the Go stack, and where it is: a
// node script (script), a condition (expr), or made at run time by a
// script (script that builds it).
type sourceAttack struct {
	name   string
	script string
	expr   string
}

// A few hundred thousand levels: each takes at least 250 bytes of stack
// (a run of new), most 2 to 4 KiB, against Go's ceiling of 1 GiB.
const crashLevels = 600_000

func sourceAttacks() []sourceAttack {
	n := crashLevels
	itoa := strconv.Itoa
	return []sourceAttack{
		{name: "parentheses in a script", script: "x = " + deep("(", "1", ")", n)},
		{name: "arrays in a script", script: "x = " + deep("[", "", "]", n)},
		{name: "objects in a script", script: "x = " + deep("{a:", "1", "}", n)},
		{name: "template substitutions in a script", script: "x = " + deep("`${", "1", "}`", n)},
		{name: "assignment chain in a script", script: deep("a=", "1", "", n)},
		{name: "conditional chain in a script", script: deep("a?b:", "1", "", n)},
		{name: "arrow chain in a script", script: deep("x=>", "1", "", n)},
		{name: "exponent chain in a script", script: deep("2**", "2", "", n)},
		{name: "prefix operators in a script", script: deep("!", "a", "", n)},
		{name: "new chain in a script", script: deep("new ", "a", "", n*4)},
		{name: "else-if chain in a script", script: "if(a);" + deep("else if(a);", "", "", n)},
		{name: "blocks in a script", script: deep("{", "", "}", n*4)},
		{name: "a sum in a script", script: "x = " + deep("a+", "a", "", n*2)},
		{name: "a member chain in a script", script: "x = a" + deep(".b", "", "", n*2)},
		{name: "a call chain in a script", script: "f" + deep("()", "", "", n*2)},
		{name: "a sum in a condition", expr: deep("a+", "a", "", n*2)},
		{name: "parentheses in a condition", expr: deep("(", "1", ")", n)},
		{name: "conditional chain in a condition", expr: deep("a?b:", "1", "", n)},
		{name: "parentheses passed to eval", script: `eval("(".repeat(` + itoa(n) + `) + "1" + ")".repeat(` + itoa(n) + `))`},
		{name: "brackets passed to Function", script: `Function("return " + "[".repeat(` + itoa(n) + `) + "]".repeat(` + itoa(n) + `))`},
		{name: "assignments passed to Function", script: `Function("a", "a=".repeat(` + itoa(n) + `) + "1")`},
		{name: "groups and a back-reference in new RegExp", script: `new RegExp("(".repeat(` + itoa(n) + `) + "a" + ")".repeat(` + itoa(n) + `) + "\\1")`},
		{name: "groups and a back-reference in RegExp()", script: `RegExp("(".repeat(` + itoa(n) + `) + "a" + ")".repeat(` + itoa(n) + `) + "\\1")`},
		{name: "groups and a back-reference passed to match", script: `"a".match("(".repeat(` + itoa(n) + `) + "a" + ")".repeat(` + itoa(n) + `) + "\\1")`},
		{name: "groups and a back-reference in a literal", script: "x = /" + deep("(", "a", ")", n) + `\1/`},
		{name: "a long pattern passed to new RegExp", script: `new RegExp("(a)\\1" + "[ab]c".repeat(1e6))`},
		{name: "template substitutions passed to eval", script: "eval(\"`${\".repeat(" + itoa(n) + ") + 1 + \"}`\".repeat(" + itoa(n) + "))"},
		// A keyword as an object's key made the scan take the next / for a
		// regular expression's start and skip what goja parses as code.
		{name: "objects behind a keyword key", script: keywordKeyBomb(10000, 60)},
		{name: "arrays behind a keyword key passed to eval", script: `const H = 32000, K = 15, I = 10;
eval("x = {if:(1)/" + ("[".repeat(H) + '1,"]"/{if:(1)/').repeat(K) + "[".repeat(I) + "1" + "]".repeat(I) + "/1}" + ("/1" + "]".repeat(H) + "/1}").repeat(K))`},
		{name: "arrays behind a keyword key in a condition", expr: `eval("x = {if:(1)/" + ("[".repeat(32000) + '1,"]"/{if:(1)/').repeat(15) + "[1]/1}" + ("/1" + "]".repeat(32000) + "/1}").repeat(15))`},
		// yield as a name: which of division or a regular expression follows
		// depends on the function around it.
		{name: "arrays behind yield divided", script: yieldBomb(32000, 20)},
		// for (a of /'/): after of comes an operand.
		{name: "arrays behind a regular expression after of", script: "for (a of /'/) ; x = " + deep("[", "1", "]", n) + "; //')"},
		{name: "arrays behind a regular expression after of passed to Function", script: `Function("for (a of /'/) ; return " + "[".repeat(500000) + "]".repeat(500000) + " //')")`},
		// The } of an arrow function's body does not end the expression
		// around it.
		{name: "chains around arrow bodies", script: "x = " + strings.Repeat("a?()=>{}:"+strings.Repeat("b=", 990), 1000) + "1"},
		{name: "conditionals around arrow bodies", script: "x = " + strings.Repeat("a?()=>{}:", 410000) + "1"},
		// of in a for head is a name unless it follows the binding: the
		// scan took of / for an operator and a pattern, and each text it
		// skipped left brackets open that goja parsed as code.
		{name: "parentheses behind of as a name in a for head", script: "var of = 1, a = 1; for (x = of /" +
			strings.Repeat(strings.Repeat("(", 250)+"/ a, /", 3000) + "x/;;) {}"},
		// A line break after an arrow function's body ends the statement:
		// the / after it starts a pattern.
		{name: "parentheses behind an arrow body and a line break", script: "x => {}\n/" +
			strings.Repeat("a,/"+strings.Repeat("(", 250)+"/", 3000) + "a/"},
		// eval parses its code as it is, where a #! line at the start is a
		// comment: the scan read it as code and what followed as templates.
		{name: "parentheses behind a hashbang passed to eval", script: "eval(\"#!`\\n\" + (\"(\".repeat(250) + \"`,`\").repeat(3000) + \"`\")"},
	}
}

// keywordKeyBomb is h levels of objects, k times, each behind {if:(1)/,
// which goja reads as a division and a scan that took if for the keyword
// read as the start of a regular expression.
func keywordKeyBomb(h, k int) string {
	u := strings.Repeat("{a:", h) + "1/{if:(1)/"
	c := "/1" + strings.Repeat("}", h) + "/1}"
	return "x = {if:(1)/" + strings.Repeat(u, k) + strings.Repeat("{a:", 10) + "1" + strings.Repeat("}", 10) + "/1}" + strings.Repeat(c, k)
}

// yieldBomb hides h levels of arrays k times behind yield used as a name.
func yieldBomb(h, k int) string {
	return "var yield = 1; x = yield /" + strings.Repeat(strings.Repeat("[", h)+`1,"]"/ yield /`, k) + "1" +
		strings.Repeat("]", h) + strings.Repeat("/ yield /1"+strings.Repeat("]", h), k-1) + "/ yield"
}

// REF 9.M10 (every source is scanned before goja parses it)
// Every source goja or regexp2 would parse too deep — inline in a script,
// in a condition, or made at run time — is refused with a Validation error
// naming the node and the line before a parser sees it; the process lives
// (each case runs in a child process: on a build without the scan, the
// case kills its child and fails), its memory stays bounded, and the next
// call on the same runtime succeeds.
func TestSourceTooDeep(t *testing.T) {
	for _, a := range sourceAttacks() {
		t.Run(a.name, func(t *testing.T) {
			if !inSubtestChild(t) {
				return
			}
			rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: 30 * time.Second}})
			require.NoError(t, err)
			defer rt.Close()
			resetPeak()
			if a.expr != "" {
				_, err = rt.Eval(context.Background(), sandbox.Evaluation{Node: "edge", Expr: a.expr})
				sandboxtest.RequireKind(t, err, fault.Validation)
				assert.Contains(t, err.Error(), `"edge"`)
			} else {
				err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker",
					Script: sandbox.Script{Source: a.script}}, agent.NewBoard())
				sandboxtest.RequireKind(t, err, fault.Validation)
				assert.Contains(t, err.Error(), `"attacker"`)
			}
			assert.Regexp(t, `line \d+`, err.Error())
			_, peak := rss()
			assert.Less(t, peak, int64(rssBound), "peak RSS")
			next := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next",
				Script: sandbox.Script{Source: `board.setVar("ok", eval("(((1)))") === 1 && /(a)\1/.test("aa"))`}}, next))
			assert.Equal(t, true, next.Vars["ok"])
		})
	}
}

// stepAttack is a script whose one native step would build far more than
// its inputs, or run far longer than its wall time: a BigInt operator or
// a built-in driven by a count the script sets.
type stepAttack struct {
	name, src string
	// grow, when set, bounds how far the peak RSS may rise above where it
	// was: a step refused before it runs leaves no trace of its output.
	grow int64
}

func stepAttacks() []stepAttack {
	return []stepAttack{
		{name: "BigInt shift", src: `1n << (2n ** 34n)`},
		{name: "BigInt power", src: `7n ** 80000000n`},
		{name: "BigInt squaring", src: `let x = 3n; for (;;) x *= x`},
		{name: "BigInt shift right by a negative count", src: `1n >> -(2n ** 34n)`},
		{name: "BigInt compound power", src: `const o = {v: 7n}; o["v"] **= 80000000n`},
		{name: "BigInt compound shift", src: `let v = 1n; v <<= 2n ** 34n`},
		{name: "BigInt.asUintN", src: `BigInt.asUintN(2 ** 34, -1n)`},
		{name: "BigInt of a long string", src: `BigInt("9".repeat(1 << 22))`},
		{name: "BigInt reached by a key built at run time", src: `// BigInt
			const B = globalThis["Big" + "Int"]; B(7) ** B(80000000)`},
		{name: "String.raw of a huge length", src: `String.raw({raw: {length: 1e9}})`},
		{name: "String.raw of a repeated string", src: `String.raw({raw: Array(4096).fill("x".repeat(1 << 20))})`},
		{name: "normalize", src: `"\uFDFA".repeat(1 << 21).normalize("NFKD")`},
		{name: "localeCompare", src: `const s = "a".repeat(1 << 22); s.localeCompare(s + "b")`},
		// The input fits the budget (32 MiB); unguarded, one step wrote
		// 144 Mi characters (96 Mi for escape), the RSS rising by 330–470
		// MiB before the heap watchdog stopped the call after it.
		{name: "encodeURIComponent", src: `encodeURIComponent("\u20ac".repeat(1 << 24))`, grow: 4 * sandbox.DefaultMemoryBytes},
		{name: "encodeURI", src: `encodeURI("\u20ac".repeat(1 << 24))`, grow: 4 * sandbox.DefaultMemoryBytes},
		{name: "escape", src: `escape("\u20ac".repeat(1 << 24))`, grow: 4 * sandbox.DefaultMemoryBytes},
		// A string doubled in one copy at every step: refused before the
		// copy that passes the budget. Unguarded, the heap watchdog stopped
		// it after the string had reached 0.4–1.3 GiB.
		{name: "doubling by +=", src: `let s = "x"; for (;;) s += s`, grow: 4 * sandbox.DefaultMemoryBytes},
		{name: "doubling by a template", src: "let s = 'x'; for (;;) s = `${s}${s}`", grow: 4 * sandbox.DefaultMemoryBytes},
		{name: "doubling by Error.prototype.toString", src: `let s = "x"; for (;;) { const e = new Error(s); e.name = s; s = String(e) }`,
			grow: 4 * sandbox.DefaultMemoryBytes},
		// new Function joins its arguments in one step: unguarded, 1.5 GiB
		// here, before the source was refused as too large.
		{name: "Function of one string many times", src: `Function(...Array(1536).fill("x".repeat(1 << 20)))`,
			grow: 4 * sandbox.DefaultMemoryBytes},
	}
}

// new Function, which counts the source it builds before building it,
// converts each argument once, in order, and makes the function as before
// (the memory bound itself: TestNativeStepsBounded).
// REF 9.M19
func TestFunctionConvertsItsArgumentsOnce(t *testing.T) {
	t.Parallel()
	rt := mustNew(t, js.Options{})
	b := agent.NewBoard()
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{
		Source: `const log = [], p = n => ({toString() { log.push(n); return n }});
			board.setVar("r", [Function(p("a"), p("b"), p("return a + b"))(2, 3), log])`}}, b))
	assert.Equal(t, []any{5.0, []any{"a", "b", "return a + b"}}, b.Vars["r"])
}

// Each native step that would build far more than its inputs is refused
// before it runs: the call ends with a memory_bytes LimitError, the
// process lives (each case runs in a child: unguarded, a case allocates
// gigabytes or runs for most of a minute), its peak RSS stays bounded,
// and the next call on the same runtime succeeds.
func TestNativeStepsBounded(t *testing.T) {
	for _, a := range stepAttacks() {
		t.Run(a.name, func(t *testing.T) {
			if !inSubtestChild(t) {
				return
			}
			// Room for the guard to be what stops the call on a loaded
			// machine; unguarded, the slowest case runs for 50 s.
			rt, err := js.New(js.Options{Limits: sandbox.Limits{WallTime: 30 * time.Second}})
			require.NoError(t, err)
			defer rt.Close()
			resetPeak()
			before, _ := rss()
			err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "attacker",
				Script: sandbox.Script{Source: a.src}}, agent.NewBoard())
			sandboxtest.RequireLimit(t, err, sandbox.LimitMemory, "attacker")
			_, peak := rss()
			assert.Less(t, peak, int64(rssBound), "peak RSS")
			if a.grow > 0 && before > 0 {
				assert.Less(t, peak-before, a.grow, "peak RSS above where it was")
			}
			next := agent.NewBoard()
			require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "next",
				Script: sandbox.Script{Source: `board.setVar("ok", String(3n ** 40n) + String.raw` + "`a${1}b`" +
					` + encodeURIComponent("€ /") + encodeURI("a?b") + escape("é"))`}}, next))
			assert.Equal(t, "12157665459056928801a1b%E2%82%AC%20%2Fa?b%E9", next.Vars["ok"])
		})
	}
}

// A program that neither names BigInt nor holds a BigInt literal runs
// with its operators as they are, and cannot make a BigInt at all: the
// sources throw a TypeError the script can catch.
func TestBigIntOnlyWhereNamed(t *testing.T) {
	rt, err := js.New(js.Options{})
	require.NoError(t, err)
	defer rt.Close()
	b := agent.NewBoard()
	require.NoError(t, sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "n", Script: sandbox.Script{Source: `
		const out = [];
		const k = "Big" + "Int";
		for (const f of [() => globalThis[k](1), () => new globalThis[k + "64Array"](1), () => eval("1n"),
			() => Function("return 2n")()]) {
			try { f(); out.push("made") } catch (e) { out.push(e.name) }
		}
		board.setVar("out", out)`}}, b))
	assert.Equal(t, []any{"TypeError", "TypeError", "TypeError", "TypeError"}, b.Vars["out"])
	v, err := rt.Eval(context.Background(), sandbox.Evaluation{Node: "edge", Expr: `String(2n ** 64n)`})
	require.NoError(t, err)
	assert.Equal(t, "18446744073709551616", v)
}

// CheckScript and CheckExpr compile as Invoke and Eval do, running
// nothing: what corral validate calls.
func TestCheckScriptAndExpr(t *testing.T) {
	require.NoError(t, js.CheckScript(`board.setVar("a", 2n ** 3n > 1n)`))
	err := js.CheckScript("x = 1\n" + deep("(", "1", ")", 2000))
	sandboxtest.RequireKind(t, err, fault.Validation)
	assert.Contains(t, err.Error(), "line 2")
	sandboxtest.RequireKind(t, js.CheckScript(`with (a) {}`), fault.Validation)
	require.NoError(t, js.CheckExpr(`tool_pending == true && count > 2`))
	sandboxtest.RequireKind(t, js.CheckExpr(`a); (b`), fault.Validation)
	sandboxtest.RequireKind(t, js.CheckExpr(deep("[", "", "]", 2000)), fault.Validation)
}

// A chain of logical operators that starts with a constant, which goja's
// compiler folds in time that doubles with each link (64 links did not
// end in ten minutes), is refused with a Validation error naming the node:
// inline, and made at run time.
func TestConstantChainsRefused(t *testing.T) {
	rt, err := js.New(js.Options{})
	require.NoError(t, err)
	defer rt.Close()
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "folder",
		Script: sandbox.Script{Source: "x = " + deep("0&&", "0", "", 64)}}, agent.NewBoard())
	sandboxtest.RequireKind(t, err, fault.Validation)
	assert.Contains(t, err.Error(), `"folder"`)
	_, err = rt.Eval(context.Background(), sandbox.Evaluation{Node: "edge", Expr: deep("1||", "0", "", 64)})
	sandboxtest.RequireKind(t, err, fault.Validation)
	err = sandbox.InvokeOn(context.Background(), rt, sandbox.Invocation{Node: "folder",
		Script: sandbox.Script{Source: `try { eval("0??".repeat(64) + "0") } catch (e) { board.setVar("e", e.name) }`}}, agent.NewBoard())
	require.NoError(t, err, "a syntax error of eval the script may catch")
}

// The runtime is a sandbox.Checker: a script that does not compile is a
// CompileError at the line and column of its own source, whether the
// parser or the source scan refused it, and a module is not its to run.
func TestRuntimeCheck(t *testing.T) {
	rt, err := js.New(js.Options{})
	require.NoError(t, err)
	defer rt.Close()
	tests := []struct {
		name, src string
		line, col int
		msg       string
	}{
		{"parser", "const a = 1;\nconst b = ;", 2, 11, "Unexpected token"},
		{"first line", "const = 1", 1, 7, "Unexpected token"},
		{"unclosed bracket", "const a = 1;\nhost.emit(\"t\", a;\n", 2, 10, "not closed"},
		{"too deep", "x = 1\n" + deep("(", "1", ")", 2000), 2, 0, "nesting deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := rt.Check(context.Background(), sandbox.Script{Name: "n", Source: tt.src})
			var ce *sandbox.CompileError
			require.ErrorAs(t, err, &ce)
			sandboxtest.RequireKind(t, err, fault.Validation)
			assert.Equal(t, tt.line, ce.Line)
			if tt.col > 0 {
				assert.Equal(t, tt.col, ce.Column)
			}
			assert.Contains(t, ce.Msg, tt.msg)
		})
	}
	require.NoError(t, rt.Check(context.Background(), sandbox.Script{Name: "ok", Source: `board.setVar("a", 1)`}))
	sandboxtest.RequireKind(t, rt.Check(context.Background(), sandbox.Script{Name: "m", Module: []byte("\x00asm")}), fault.Validation)
}
