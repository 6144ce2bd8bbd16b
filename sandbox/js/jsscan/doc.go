// Package jsscan checks JavaScript source, and regular-expression
// patterns, before a parser sees them: one pass over the text, linear in
// its length, with no recursion, that bounds its size and how deep its
// nesting goes.
//
// goja's parser, its compiler and regexp2 (the backtracking regular
// expression engine goja uses for patterns with back-references or
// lookaround) descend recursively, one Go call chain per level of nesting;
// a Go stack overflow is a fatal error that no recover catches, so a
// script of a few hundred thousand nested parentheses would end the host
// process. The scan refuses such a source first, with an *Error naming the
// line.
//
// # What counts as a level
//
// A level is one place where the parser recurses through its chain of
// expression or statement functions: an open bracket ( [ { or template
// substitution ${, and, within one bracket, each operator that makes the
// parser recurse instead of loop — assignment operators (a = b = c), ?,
// =>, **, prefix operators (! ~ + - ++ -- typeof void delete new await
// yield ...), labels — and each statement head whose body is a statement
// (if, else, for, while, with, do). The parser loops over a chain of
// binary operators (a + b + c), of members (a.b.c) and of calls (f()()),
// but it builds a syntax tree as deep as the chain, which goja's compiler
// descends recursively: each binary operator, dot, call, index and
// tagged template counts as a level too. A chain ends where its expression
// does: at ; or , and where one operand follows another (a line break
// that ends a statement); a run of else-if keeps counting until the if
// statement ends. A regular expression literal's groups count on top of
// where it stands. The count errs high: ? counts with its :, a label like
// an object key.
//
// # Regular expressions or division
//
// A slash starts a regular expression where the grammar expects an
// operand, as goja's parser decides: at the start of a statement, after
// an operator or an opening bracket, after a keyword that takes an operand
// (return, typeof, case ...), after the ) of an if, for, while or with
// head, and after the } of a block or of a function or class declaration;
// elsewhere (after an operand, a ], or the } of an object literal or of a
// function or class expression) it divides.
//
// # Bounds
//
// Bounds names a size and a depth; the package's Script, Expr, Code and
// Pattern apply the defaults the sandbox uses (docs/sandbox.md gives the
// measurements behind them). Info says what the scan saw that a caller
// needs: whether the source can make a BigInt.
package jsscan
