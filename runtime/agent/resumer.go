package agent

// Resumer is an engine that can continue a run from a checkpoint.
// CanResume reports whether cp can be resumed by this engine (for example
// that its spec version and steps still match the engine's graph); the
// session calls it before it resumes a parked run.
type Resumer interface {
	CanResume(cp Checkpoint) error
}
