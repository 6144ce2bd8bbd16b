// Package session holds transport-neutral sessions: a session is keyed by
// an agent id and a context id, and runs one turn at a time on the agent's
// engine.
//
// This package defines the session key and the host factory contract that
// the runtime uses to build each turn's host: the base host (publish to the
// generation's bus, checkpoint to its store) decorated by the application's
// WithHostFactory and WithResultHostFactory decorators.
package session
