// Package archtest holds no code, only a test: the one that keeps the
// module's dependencies pointing down (docs/architecture.md).
//
// # What it checks
//
// The test lists every package of the module and every package they
// depend on with `go list -deps -json ./...` (test files left out: a test
// may build a whole runtime) and checks a table of rules, each a set of
// packages, the packages they must not reach, and the reason. A rule is
// either about every dependency (sandbox/js must not reach
// runtime/session, however indirectly) or about direct imports only (no
// package but sandbox/js imports goja). A failure names the rule, its
// reason, and the chain of imports that breaks it.
//
// A rule whose patterns no longer match a package fails too, so that a
// rename cannot leave a rule that checks nothing.
//
// # Running it
//
// It needs the go command on PATH, as `go test` provides:
//
//	go test ./internal/archtest
package archtest
