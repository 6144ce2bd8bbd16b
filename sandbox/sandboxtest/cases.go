package sandboxtest

import (
	"errors"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Cases returns the cases of the suite, in the order Run runs them.
func Cases() []Case {
	var out []Case
	for _, group := range [][]Case{abiCases(), limitCases(), stateCases(), signalCases(), boardCases(), evalCases()} {
		out = append(out, group...)
	}
	return out
}

func abiCases() []Case {
	return []Case{
		{"capability granted", "A host function whose capability is granted reaches the host: host.emit publishes one stream delta.", capabilityGranted},
		{"capability refused", "A host function whose capability is not granted throws a policy_denied error the script can catch, and nothing reaches the host.", capabilityRefused},
		{"capability refused uncaught", "An uncaught refused call ends the call with a PolicyDenied error that names the function and the node.", capabilityRefusedUncaught},
		{"capability missing on host", "A granted capability that the host does not provide is refused as well (Date.now without a clock).", capabilityMissing},
		{"publish needs an event bus", "A granted host.publish is refused with policy_denied, caught or not, when the host yields no event bus, and nothing is published.", publishWithoutBus},
		{"bad abi arguments", "Malformed arguments to a host function throw a validation error, and a refused subject publishes nothing.", badArguments},
		{"every function bound", "Every function of the catalog is bound on host, granted or not.", everyFunctionBound},
		{"publish confined", "host.publish writes only under the run's own custom namespace, whatever suffix the script names.", publishConfined},
		{"steer node", "The canonical steer node appends the drained steer messages to the main channel; an idle round appends nothing.", steerNode},
	}
}

func limitCases() []Case {
	return []Case{
		{"wall time", "A script that loops forever stops with a wall_time LimitError (Timeout) naming the node.", wallTime},
		{"wall time in catch and finally", "A loop that restarts itself from catch and finally blocks stops at the wall time too.", wallTimeCatch},
		{"cancel", "Cancelling the context stops a looping script with Aborted.", cancelled},
		{"stack depth", "Unbounded recursion stops with a stack_depth LimitError (BudgetExceeded), even when it catches.", stackDepth},
		{"memory string", "A script that doubles a string forever stops with a memory_bytes LimitError.", memoryString},
		{"memory objects", "A script that fills an array with objects forever stops with a memory_bytes LimitError.", memoryObjects},
		{"value size board", "A board write larger than max_value_bytes stops the call with a max_value_bytes LimitError and writes nothing.", valueSizeBoard},
		{"value size abi", "A host call argument larger than max_value_bytes stops the call with a max_value_bytes LimitError.", valueSizeABI},
		{"events", "Publishing past max_events stops the call with a max_events LimitError even when the script catches errors.", eventLimit},
		{"next call unharmed", "After a call stopped by a limit, the next call on the same runtime succeeds.", nextCallUnharmed},
	}
}

func stateCases() []Case {
	return []Case{
		{"determinism", "Two runs with the same seed and inputs leave identical boards, events and journals.", determinism},
		{"dates in utc", "Dates are built, parsed and shown in UTC whatever the host's time zone.", datesUTC},
		{"isolation", "Globals and prototype changes made by one run are invisible to the next run, of the same or another session.", isolation},
		{"concurrent isolation", "Runs in parallel see neither each other's globals nor each other's boards.", concurrentIsolation},
	}
}

func signalCases() []Case {
	return []Case{
		{"signal done", "signal.done() ends the script at once with success; nothing after it runs, not even a finally block.", signalDone},
		{"signal interrupt", "signal.interrupt ends the script with an *agent.InterruptedError carrying the cause and the message.", signalInterrupt},
		{"signal error", "signal.error ends the script with an error of the class it names; an unknown class is Internal.", signalError},
		{"uncaught exception", "An uncaught exception ends the call with an Internal *sandbox.ScriptError naming the node.", uncaughtException},
		{"compile error", "A script that does not compile fails with Validation, naming the node.", compileError},
	}
}

func boardCases() []Case {
	return []Case{
		{"board vars", "getVar, setVar, hasVar, deleteVar and getVars read and write the board's vars as JSON values.", boardVars},
		{"board reads are copies", "A value read from the board is a copy: changing it changes the board only through setVar.", boardCopies},
		{"board channels", "channel never returns null; setChannel and appendChannel write valid messages; MAIN_CHANNEL is the main channel.", boardChannels},
		{"board writes measured", "A call's writes (Outcome.Writes), applied to the board it was handed, count the board's size exactly (Writes.ApplyMeasured equals BoardJSONBytes), whether or not the caller handed it the size (Invocation.BoardBytes); the board handed in is never written.", boardWritesMeasured},
		{"board invalid messages", "appendChannel and setChannel throw a validation error for an invalid message and write nothing.", boardInvalid},
		{"board reserved names", "Vars and channels whose names start with __ (but the main channel) are the kernel's: writing them throws a validation error.", boardReserved},
		{"board resolve", "resolve keeps a lone reference's type and applies defaults; resolveString formats; a missing var without a default throws validation.", boardResolve},
		{"invocation globals", "run, node, config and parallel answer from the invocation; config is frozen, also when static; cancelNode is false outside a parallel wave.", invocationGlobals},
	}
}

func evalCases() []Case {
	return []Case{
		{"eval condition", "Eval returns the JSON value of an expression over vars.", evalCondition},
		{"eval missing var", "An identifier that names no var reads as undefined instead of throwing.", evalMissing},
		{"eval limits", "An expression that loops stops at the wall time and one that recurses at the stack depth.", evalLimits},
		{"eval isolation", "An expression cannot change what the next expression sees.", evalIsolation},
		{"eval syntax", "An expression that does not compile, or that is more than one expression, is a Validation error.", evalSyntax},
	}
}

// RequireLimit fails t unless err is a *sandbox.LimitError of limit for
// node, of kind Timeout (wall and run time) or BudgetExceeded.
func RequireLimit(t *testing.T, err error, limit, node string) {
	t.Helper()
	var le *sandbox.LimitError
	require.ErrorAs(t, err, &le, "want a %s LimitError, got %v", limit, err)
	assert.Equal(t, limit, le.Limit, "limit: %v", err)
	assert.Equal(t, node, le.Node)
	kind := fault.BudgetExceeded
	if limit == sandbox.LimitWallTime || limit == sandbox.LimitRunTime {
		kind = fault.Timeout
	}
	assert.True(t, errors.Is(err, kind), "kind of %v: want %s", err, kind)
}

// RequireKind fails t unless err carries kind.
func RequireKind(t *testing.T, err error, kind *fault.Kind) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, kind), "want kind %s, got %v (kind %s)", kind, err, fault.KindOf(err))
}

// Var returns the board var name of res, failing t when it is not set.
func Var(t *testing.T, res Result, name string) any {
	t.Helper()
	v, ok := res.Board.Vars[name]
	require.True(t, ok, "board var %q is not set (vars: %v)", name, res.Board.Vars)
	return v
}
