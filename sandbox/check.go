package sandbox

import (
	"context"
	"fmt"
	"regexp"
	"strconv"

	"github.com/corral-rt/corral/fault"
)

// Checker is a Runtime that checks a script without running it. Check
// does to s what Invoke does before a first call — compiles JavaScript
// with every check the runtime makes of source, or checks a WebAssembly
// module against the module bounds, compiles it and checks that Entry is
// an export the runtime can call — and returns the error Invoke would
// return for it: Validation (BudgetExceeded for a module past a limit),
// with a *CompileError in its chain when the runtime knows the line. Check
// runs no code of the script: no top-level statement, no start function.
// A runtime that caches what it compiles may keep the result for Invoke.
//
// Engines check every script they are built with (graph script nodes,
// tools), so that a document that builds has scripts that compile, and
// `corral validate` reports a syntax error with its file and line.
type Checker interface {
	Check(ctx context.Context, s Script) error
}

// CheckScript checks s with rt without running it, as far as rt allows:
// with Check when rt is a Checker; else, for source on a JavaScript
// runtime (one whose Name is "js"), by having rt evaluate "typeof (function() {<source>\n})" — the source compiled
// through the runtime's own compiler as the body of a function that is
// never called (a source that closes that function early is refused, and
// what it could run is no more than a graph condition can: an expression
// in the evaluation sandbox, under lim). A module is left to its first
// call when rt is not a Checker. A script that does not compile is a
// Validation error holding a *CompileError with its line when the
// runtime's message gives one.
func CheckScript(ctx context.Context, rt Runtime, s Script, lim Limits) (err error) {
	defer func() {
		// A broken runtime value (a wrapper of a nil runner) must fail the
		// check, not the process.
		if r := recover(); r != nil {
			err = fault.New(fault.Internal, "check "+s.Name, "the script runtime failed: %v", r)
		}
	}()
	if c, ok := rt.(Checker); ok {
		return c.Check(ctx, s)
	}
	if s.Source == "" || rt.Name() != "js" {
		return nil
	}
	v, err := rt.Eval(ctx, Evaluation{Node: s.Name, Expr: probePrefix + s.Source + probeSuffix, Limits: lim})
	switch {
	case fault.Is(err, fault.NotAvailable):
		return nil // the runtime evaluates no expressions
	case err != nil && fault.Is(err, fault.Validation):
		return compileError(s.Name, err)
	case err != nil:
		return err
	case v != "function":
		return &CompileError{Script: s.Name, Msg: "not a function body (unbalanced braces?)"}
	}
	return nil
}

// The probe's wrapper adds no line: line numbers are the source's own.
const (
	probePrefix = "typeof (function() {"
	probeSuffix = "\n})"
)

// gojaLine finds the place in a JavaScript compiler message
// ("Line 3:14 Unexpected token").
var gojaLine = regexp.MustCompile(`Line (\d+):(\d+) `)

// compileError makes a CompileError of a compiler error: the line and
// column its message gives (the column on line 1 corrected for the
// probe's wrapper) and the message after them, or the whole message.
func compileError(name string, err error) error {
	ce := &CompileError{Script: name, Msg: err.Error()}
	if loc := gojaLine.FindStringSubmatchIndex(ce.Msg); loc != nil {
		m := ce.Msg
		ce.Line, _ = strconv.Atoi(m[loc[2]:loc[3]])
		ce.Column, _ = strconv.Atoi(m[loc[4]:loc[5]])
		if ce.Line == 1 {
			ce.Column = max(ce.Column-len(probePrefix), 1)
		}
		ce.Msg = m[loc[1]:]
	}
	return ce
}

// CompileError is a script that does not compile, at a place of its
// source. Its kind is Validation.
type CompileError struct {
	Script string // the script's name
	Line   int    // the line in the script's own source, from 1; 0 when unknown
	Column int    // the column in Line, from 1; 0 when unknown
	Msg    string // what is wrong, in the compiler's words
}

// Error formats as "compile <script>: line L:C: msg", leaving out what is
// unknown.
func (e *CompileError) Error() string {
	s := "compile " + e.Script + ": "
	switch {
	case e.Line > 0 && e.Column > 0:
		s += fmt.Sprintf("line %d:%d: ", e.Line, e.Column)
	case e.Line > 0:
		s += fmt.Sprintf("line %d: ", e.Line)
	}
	return s + e.Msg
}

// Unwrap returns the kind.
func (e *CompileError) Unwrap() error { return fault.Validation }
