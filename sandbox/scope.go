package sandbox

import "context"

// RunScoper is implemented by runtimes that keep state for the length of
// one run, such as a WebAssembly instance with a heavy start that the
// nodes of one run share. The graph engine calls BeginRun on each of its
// runtimes that implements it when Execute starts (a resumed run is a new
// begin), and the returned end function once when Execute returns,
// whatever the outcome. Invocations of the run carry the same
// RunInfo.RunID in between.
//
// BeginRun must not fail: a runtime that cannot prepare the run's state
// prepares it on the first invocation instead. end must release
// everything the run held; it is called exactly once. An engine that binds
// one runtime under two names begins the run twice, each begin with its
// own end.
type RunScoper interface {
	BeginRun(ctx context.Context, run RunInfo) (end func())
}
