// Package reftest keeps the behaviour reference (docs/reference) and the
// code that cites it in step.
//
// Tests, and comments of the code that implements a rule, cite numbered
// items of the reference as "REF" followed by an id: an item such as 2.1.3,
// 2.1.3.1 or 9.M1, or a section such as 5.4. One citation may name several
// ids, separated by commas, semicolons, slashes or "and", and ranges such as
// 2.2.2–2.2.13 (also written with "-", "—" or "to"). The keyword in quotes
// is a mention, not a citation; anywhere else in a comment it must be
// followed by an id. See docs/reference/README.md.
//
// The package's test walks every Go file of the module, reads the comments
// (string literals are not citations), and fails naming file:line for
// every cited id that is not a numbered item or section of the reference.
// It also checks the reference itself: no id numbered twice, and every item
// under an item or section that exists.
//
// Check does the work and returns a Report; CitationsIn and ParseIDs
// extract citations from comment text; ParseReference reads the numbered
// items of one reference file.
package reftest
