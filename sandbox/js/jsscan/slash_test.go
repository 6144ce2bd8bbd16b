package jsscan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/corral-rt/corral/sandbox/js/internal/astwalk"
	"github.com/corral-rt/corral/sandbox/js/jsscan"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gojaRegexps returns where goja's parser found a regular expression
// literal in src, and whether it parsed src at all.
func gojaRegexps(t testing.TB, src string) ([]int, bool) {
	prg, err := parser.ParseFile(nil, "", src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, false
	}
	var at []int
	require.NoError(t, astwalk.Walk(prg, astwalk.Hooks{Pointer: func(p any) error {
		if r, ok := p.(*ast.RegExpLiteral); ok {
			at = append(at, int(r.Idx)-1) // Idx counts from 1
		}
		return nil
	}}))
	slices.Sort(at)
	return at, true
}

// slashAgrees fails t when the scan accepts src, goja parses it, and the
// two disagree on where a regular expression starts: everything the scan
// bounds rests on that decision.
func slashAgrees(t testing.TB, src string) {
	scanned, err := jsscan.RegexpStarts(src)
	if err != nil {
		return
	}
	parsed, ok := gojaRegexps(t, src)
	if !ok {
		return
	}
	if !slices.Equal(scanned, parsed) {
		t.Fatalf("the scan read patterns at %v, goja's parser at %v, in %.200q", scanned, parsed, src)
	}
}

// slashCases put a slash after every kind of token the scan tells apart,
// as goja's parser reads them.
var slashCases = []string{
	"a = b / c / d", "x = /re(a)[/(]/g.test(s)", "if (a) /x/.test(b)", "function f(){} /x/.test(b)",
	"x = function(){} / 2", "x = {a: 1} / 2", "a\n++/x/.lastIndex", "a++ / 2", "x = a\n/b/g",
	"class A { m() { return /a/ } }", "switch (x) { case /a/: y = 2; break; default: /b/ }",
	"async function f() { await /x/ } /x/", "l: /x/", "x = a ? /b/ : /c/", "x => /a/", "x => {} \n/a/",
	"for (const m of /a(b)/g.exec(s) || []) {}", "var of = 4; x = of / 2", "x = {of: 1}.of / 2",
	"var of = 1; for (x = of / 2 / 1; x < 1; x++) {}", "var of = 1; for (of / 2;;) break",
	"var of = [1]; for (var of of of) /a/", "for (x of of) /a/", "x = {if: 1, for: 2}.if / 2",
	"x = a.if / b.for / c", "x = this / 2", "x = null / 2", "x = [] / 2", "x = (1) / 2",
	"do /a/; while (0) /b/", "do {} while (0) /b/", "x = typeof /a/", "x = void /a/", "throw /a/",
	"x = `${/a/}` / 2", "x = `a` / 2", "x = 1 / 2 / 3", "x = a-- / 2", "x = !/a/", "x = -/a/.lastIndex",
	"x = {} \n/a/g", "{} /a/", "x = class {} / 2", "class A {} /a/", "x = async () => {} / 2",
	"let let_ = 1; let_ / 2", "x = new.target / 2", "x = a?.b / 2", "x = a /= 2", "x = /=/",
	"x = {get a() { return /a/ }, set a(v) {}} / 2", "x = { async *g() {} } / 2", "if (a) {} else /a/",
	"x = a in /a/", "x = a instanceof /a/.constructor", "x = (a) => /a/", "x = async / 2", "x = get / 2",
	"class A { static m() { return /a/ } get x() { return 1 / 2 } }", "x = a\n/b/ 1", "label: { /a/ }",
	"x = [/a/, /b/] / 2", "f(/a/, /b/)", "x = a ? b : /c/", "x = 1 ?.5 : /a/", "x = y => y / 2",
	"try {} catch (e) {} /a/", "try {} finally {} /a/", "while (a) /x/", "with (a) /x/", "x = {a} / 2",
	"class A { if() { return /a/ } } /b/", "x = { return() {} } / 2", "class A { static { /a/ } } /b/",
}

// REF 9.M10 (a / starts a pattern where goja's parser reads one)
func TestSlashAsGojaReadsIt(t *testing.T) {
	for _, src := range slashCases {
		slashAgrees(t, src)
	}
	// The cases parse and the scan accepts them: the comparison ran.
	var compared int
	for _, src := range slashCases {
		if _, err := jsscan.RegexpStarts(src); err == nil {
			if _, ok := gojaRegexps(t, src); ok {
				compared++
			}
		}
	}
	assert.Greater(t, compared, len(slashCases)*3/4, "most cases are compared")
}

// FuzzSlash: wherever the scan accepts a source that goja's parser
// parses, they read the same slashes as patterns.
func FuzzSlash(f *testing.F) {
	for _, s := range slashCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 || strings.Count(src, "(")+strings.Count(src, "[")+strings.Count(src, "{") > 200 {
			return // the parser's recursion is what the scan bounds; keep it shallow here
		}
		slashAgrees(t, src)
	})
}
