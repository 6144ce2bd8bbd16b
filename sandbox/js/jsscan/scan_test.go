package jsscan_test

import (
	"errors"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/corral-rt/corral/sandbox/js/internal/fold"
	"github.com/corral-rt/corral/sandbox/js/jsscan"
	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ordinary code passes: regular expressions and divisions told apart,
// templates, comments, labels, classes, async functions, chains that end.
func TestScanAccepts(t *testing.T) {
	for _, src := range []string{
		"a = b / c / d", "x = /re(a)[/(]/g.test(s)", "if (a) /x/.test(b)", "function f(){} /x/.test(b)",
		"x = function(){} / 2", "x = {a: 1} / 2", "`a${b + `c${d}`}e`", "a\n++b", "a++ / 2",
		"class A { m() { return /a/ } }", "switch (x) { case 1: y = 2; break; default: z }",
		"async function f() { await g() } /x/", "l: for (;;) break l", "x = a ? b : c",
		"const {a, b: {c}} = o", "x => ({a})", "o?.a ?? 1", "a?.5:1", "/* c */ // d\n'x\\\ny'",
		strings.Repeat("a = 1\n", 5000), strings.Repeat("if (a) { b = c = d } else if (e) f()\n", 3000),
		strings.Repeat("x = y ? z : w;\n", 5000), strings.Repeat("f(a => b => c);\n", 3000),
		"x = {if: 1, for: 2, while() { return /a/ }, catch: (1) / 2}", "x = a.if / b.for / c",
		"for (const m of /a(b)/g.exec(s) || []) {}", "var of = 4; x = of / 2", "x = {of: 1}.of / 2",
		strings.Repeat("x = a ? () => {} : b = c = d;\n", 3000), "function* g() { yield (/a/) }",
	} {
		_, err := jsscan.Script(src)
		assert.NoError(t, err, "%.60q", src)
	}
}

// Each construct that makes the parser recurse counts as a level: past
// MaxDepth of any of them the scan refuses, naming the line.
func TestScanRefusesDeepNesting(t *testing.T) {
	n := jsscan.MaxDepth + 1
	for name, src := range map[string]string{
		"parentheses": strings.Repeat("(", n) + strings.Repeat(")", n),
		"assignments": strings.Repeat("a=", n) + "1", "conditionals": strings.Repeat("a?b:", n) + "c",
		"arrows": strings.Repeat("x=>", n) + "1", "exponents": strings.Repeat("2**", n) + "2",
		"prefix": strings.Repeat("!", n) + "a", "signs": strings.Repeat("- ", n) + "a",
		"new": strings.Repeat("new ", n) + "a", "templates": strings.Repeat("`${", n) + strings.Repeat("}`", n),
		"if": strings.Repeat("if(a)", n) + "b", "else if": "if(a);" + strings.Repeat("else if(a);", n),
		"else if blocks": "if (a) {} " + strings.Repeat("else if (b) {} ", n),
		"blocks":         strings.Repeat("{", n) + strings.Repeat("}", n), "labels": strings.Repeat("l:", n) + "b",
		"regexp groups": "\n\nx = /" + strings.Repeat("(", n) + "/",
		"sums":          strings.Repeat("a+", n) + "a", "members": "a" + strings.Repeat(".b", n),
		"calls": "f" + strings.Repeat("()", n), "indexes": "a" + strings.Repeat("[0]", n),
		"comparisons": strings.Repeat("a<", n) + "a", "nullish": strings.Repeat("a??", n) + "a",
		"tagged templates": "f" + strings.Repeat("``", n), "in": strings.Repeat("a in ", n) + "b",
	} {
		_, err := jsscan.Script(src)
		var se *jsscan.Error
		require.True(t, errors.As(err, &se), "%s: want a scan error, got %v", name, err)
		assert.Contains(t, se.Reason, "nesting deeper than", name)
	}
	_, err := jsscan.Script("\n\nx = /" + strings.Repeat("(", n) + "/")
	assert.Contains(t, err.Error(), "line 3")
}

func TestScanBounds(t *testing.T) {
	_, err := jsscan.Expr(strings.Repeat("a+", jsscan.MaxExprBytes))
	assert.ErrorContains(t, err, "bytes, more than")
	_, err = jsscan.Script("x = " + strings.Repeat("1", jsscan.MaxNumberBytes+1) + "n")
	assert.ErrorContains(t, err, "a number of")
	assert.Error(t, jsscan.Pattern(strings.Repeat("a", jsscan.MaxPatternBytes+1)))
	assert.Error(t, jsscan.Pattern(strings.Repeat("(", jsscan.MaxDepth+1)))
	assert.NoError(t, jsscan.Pattern(`(a)\1[(]`+strings.Repeat("(a)", 500)))
	info, err := jsscan.Script("x = 12n")
	require.NoError(t, err)
	assert.True(t, info.BigInt)
	info, _ = jsscan.Script("x = globalThis['Big' + 'Int']")
	assert.False(t, info.BigInt)
}

// FuzzScan: the scan never panics, and what it accepts goja parses and
// compiles (after the sandbox's fold check) on a Go stack of 64 MiB (its
// ceiling is 1 GiB): past that, or in a compile that does not end, the
// fuzzer sees the process fail.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		"a = (b) / c", "x = /(a)\\1/", "`${`${a}`}`", "if (a) /x/; else b", "{a: {b: [c]}}",
		"x = {} / 1 / (((( a", "a ? b : c ? d : e", "f(a => b => c)", "class A { static #x = 1 }",
		"x = a\n/(/\n/ b", "'\\\n'", "/[/]/", "async\nfunction f(){}",
	} {
		f.Add(s)
	}
	old := debug.SetMaxStack(64 << 20)
	f.Cleanup(func() { debug.SetMaxStack(old) })
	f.Fuzz(func(t *testing.T, src string) {
		amplified := strings.Repeat(src, 64)
		for _, s := range []string{src, amplified} {
			if _, err := jsscan.Scan(s, jsscan.Bounds{MaxDepth: jsscan.MaxDepth}); err != nil {
				continue
			}
			prg, err := parser.ParseFile(nil, "", s, 0, parser.WithDisableSourceMaps)
			if err == nil && fold.Check(prg) == nil { // as the sandbox compiles
				_, _ = goja.CompileAST(prg, false)
			}
		}
	})
}

// yield or await followed by / is refused as ambiguous (a regular
// expression in a generator or async function, a division where the word
// is a name); everything after it would be read one way or the other.
func TestScanRefusesAmbiguousSlash(t *testing.T) {
	for _, src := range []string{"var yield = 1; x = yield / 2", "function* g() { yield /a/ }", "x = await /* c */ / 2"} {
		_, err := jsscan.Script(src)
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), "ambiguous", src)
	}
}

// The text of a string, template, comment or pattern may leave at most
// MaxHiddenBrackets brackets open, read as code: if the scan ever took code
// for text, that is all the levels it could miss there.
func TestScanBoundsHiddenBrackets(t *testing.T) {
	n := jsscan.MaxHiddenBrackets
	for _, src := range []string{
		`x = "` + strings.Repeat("(", n) + `"`, "// " + strings.Repeat("[", n), "x = `" + strings.Repeat("{", n) + "`",
		`x = "` + strings.Repeat("()", 10*n) + `"`, "/* " + strings.Repeat("[]", 10*n) + " */",
	} {
		_, err := jsscan.Script(src)
		assert.NoError(t, err, "%.40q", src)
	}
	for _, src := range []string{
		`x = "` + strings.Repeat("(", n+1) + `"`, "// " + strings.Repeat("[", n+1), "/* " + strings.Repeat("{", n+1) + " */",
		"x = `" + strings.Repeat("[", n+1) + "${a}`", "x = /[" + strings.Repeat("(", n+1) + "]/",
	} {
		_, err := jsscan.Script(src)
		require.Error(t, err, "%.40q", src)
		assert.Contains(t, err.Error(), "brackets open", "%.40q", src)
	}
}

// REF 9.M10 (brackets left open by texts, bounded together)
// Brackets left open by many texts add up, read as code: together they
// may leave at most MaxHiddenTotal open at any point, and a close in a
// later text closes what an earlier one left open.
func TestScanBoundsHiddenBracketsTogether(t *testing.T) {
	per := jsscan.MaxHiddenBrackets - 6
	many := jsscan.MaxHiddenTotal/per + 1
	open := `x = "` + strings.Repeat("(", per) + `"` + "\n"
	_, err := jsscan.Script(strings.Repeat(open, many))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "brackets open together")
	for _, src := range []string{
		strings.Repeat(open, many-1),
		strings.Repeat(open+`x = "`+strings.Repeat(")", per)+`"`+"\n", 10*many),
		strings.Repeat(`s = "f(" + a + ")" // [note]`+"\n", 10*jsscan.MaxHiddenTotal),
	} {
		_, err := jsscan.Script(src)
		assert.NoError(t, err, "%.60q", src)
	}
}

// REF 9.M10 (a #! line of eval and Function code is a comment)
// Code that eval or Function parses as it is may start with a #! line,
// which goja reads as a comment, and so does the scan; in a node script
// (wrapped in a function) #! is not a comment.
func TestScanHashbang(t *testing.T) {
	_, err := jsscan.Code("#!/usr/bin/env node\nx = /a(b)/.test(s) / 2")
	assert.NoError(t, err)
	_, err = jsscan.Code("#!`\nx = " + strings.Repeat("a+", jsscan.MaxDepth+1) + "a\n//`")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nesting deeper")
	starts, err := jsscan.RegexpStarts("#! /a/ `\nx = /b/")
	require.NoError(t, err)
	assert.Equal(t, []int{13}, starts, "the pattern on the hashbang line is a comment's text")
	slashAgrees(t, "#! /a/ `\nx = /b/")
}
