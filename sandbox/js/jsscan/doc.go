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
// A #! at the very start of code that goja parses as it is (eval and
// Function code, Bounds.Hashbang) opens a comment to the end of its line,
// as goja reads it. FuzzSlash and TestSlashAsGojaReadsIt hold the scan to
// goja's parser: wherever both accept a source, they read the same
// slashes as patterns.
//
// # Text read as code
//
// Everything the scan counts rests on that decision: a wrong guess would
// make it take code for the text of a pattern (or the text of a pattern
// for code), and whatever brackets that text opens would be hidden from
// the count. So the scan also reads every text — string, template text,
// comment, pattern — as if it were code, and bounds the brackets it
// leaves open: at most MaxHiddenBrackets at any point of one text, and at
// most MaxHiddenTotal at any point of all of them read in a row, where a
// close in a text closes what an earlier text left open. The second bound
// holds against any number of such mistakes. Let D be the scan's depth at
// some point, H the brackets the texts before it leave open read that way,
// and P the depth of a parser that reads some of those texts as code and
// the rest of the source as the scan does. Then P <= D + H at every
// point: an open bracket in code adds one to D and to P, one in a text
// one to H and at most one to P; a close in code takes one from D and
// from P (P > 0 there, as D > 0); a close in a text takes one from P, or
// leaves P at 0, and takes one from H, or leaves H at 0 — if H was 0, P
// was at most D before and is still. So goja nests at most
// MaxDepth + MaxHiddenTotal brackets deep however many texts it reads as
// code (about 22 MiB of stack at the costliest 4.4 KiB a level). What the
// bound does not cover is a parser that reads code the scan counted as
// the text of a string or comment it opened in the middle of such a text;
// that takes a second wrong guess inside the first, and the agreement
// with goja's parser above is what rules out the first. Operators in a
// text are not counted: a base64 string is full of them.
//
// # Bounds
//
// Bounds names a size and a depth; the package's Script, Expr, Code and
// Pattern apply the defaults the sandbox uses (docs/sandbox.md gives the
// measurements behind them). Info says what the scan saw that a caller
// needs: whether the source can make a BigInt.
package jsscan
