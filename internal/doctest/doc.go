// Package doctest holds the test that compiles the Go snippets of the
// user documentation: every ```go block of README.md and docs/ is
// extracted, wrapped into a file of its own package (a snippet of
// statements becomes the body of a function that returns an error; one of
// declarations stays at the file's top level), given the imports its
// package names need, and built with `go build` and `go vet` in a
// workspace beside the module. An error names the Markdown file and line.
//
// A snippet states what it assumes (the app, ctx or doc the prose has
// introduced) in a hidden preamble: an HTML comment right before the
// fence, which Markdown does not show. CONTRIBUTING.md describes the
// convention.
//
// The package has no code of its own; run its test alone with
//
//	go test ./internal/doctest
package doctest
