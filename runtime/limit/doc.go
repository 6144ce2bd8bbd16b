// Package limit holds Limits, what one sandboxed call may spend: wall
// time, memory, stack depth, the size of values crossing the host ABI,
// events, log bytes and the board's size, and a run's total time.
//
// The sandbox contract names them sandbox.Limits (an alias of Limits);
// they are defined here, below the sandbox, so that contracts which hand a
// caller's limits down without running scripts themselves (tool.Batch)
// need not import the sandbox.
//
// # Rules
//
// The zero value of a field means "the default" (Defaults has every field
// set). Runtime settings set limits and may raise one above its default
// (WithDefaults); an agent or a caller may only tighten them (Tighten); a
// document never loosens them. Validate refuses a negative field.
package limit
