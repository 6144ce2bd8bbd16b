// Package session holds transport-neutral sessions. A session is keyed by an
// agent id and a context id (Key) and runs one turn at a time on the agent's
// engine; the Manager owns every session of a runtime.
//
// # Lifecycle
//
// Manager.Open (or GetOrCreate) returns a Lease on the session of a key,
// creating it when needed; every lease is independent and Lease.Close is
// idempotent. A session with no lease that stays idle (no active turn, no
// pending prompt, no attached sink) for the idle timeout is reclaimed; a
// later Open creates a fresh one.
//
// Session.Start runs a request as a Turn: it interrupts the active turn with
// cause user_input and waits for it, mints a run id ("run-" + 16 hex),
// builds the turn's host from the epoch's HostFactory, wraps it (the factory
// product innermost, then the ephemeral wrapper for ephemeral sessions, then
// the steer-source wrapper), attaches the stream sinks and runs the engine
// through agent.Execute on its own goroutine. Turn.Wait returns the result
// once the turn has settled, after every sink has drained.
//
// A turn's steer queue (Turn.Steer, PendingSteer, DrainSteer) is the
// agent.SteerSource capability of its host. AskUser on the host publishes a
// PromptRequested event and waits for Turn.Reply, an interrupt, the turn's
// end or its ctx; each resolution publishes PromptResolved.
//
// With resume on and a checkpoint store, each non-ephemeral session keeps
// one record in the store (SessionRecordID): the last committed board, which
// seeds the next turn as history, and the run that did not commit, which
// Session.Resume replays under its run id. Manager.DeleteSession removes the
// live session and the record.
//
// Manager.SwapDeps installs a new epoch of dependencies: running turns keep
// the one they started on, and the old epoch's onRetired hook runs once its
// last turn ends. Manager.Drain refuses new leases and turns for good and
// waits until every session is idle; Manager.Close interrupts every turn
// with cause host_shutdown and waits, bounded by the close timeout.
//
// # Ownership
//
// When several nodes share a deployment, Deps.Ownership says which node
// runs a key's turns. Start and Resume acquire a Claim on the key before
// they read durable state, the turn holds it while it runs (its run's ctx
// carries it: ClaimFromContext), and releases it once settled; a key that
// another node holds is refused with an *OwnedError (NotAvailable) naming
// the owner, and a turn whose claim is lost is cancelled. DeleteSession
// claims the key the same way before it removes durable state, so it is
// refused while a turn runs on another node and no turn runs anywhere
// while it removes. nil is LocalOwnership: every claim is granted at once
// and never lost.
//
// # Delivery
//
// A turn streams its run to the sinks of its SinkSpecs. One coordinator
// per turn subscribes to agent.run.<run>.> with Block backpressure, so it
// loses nothing, and routes each envelope in bus order: as it is to the raw
// sinks, and through the confirmed stream (speculative branch deltas held
// until their branch is accepted, each emission with a delivery cursor) to
// the confirmed sinks. Each sink has its own bounded queue and delivery
// goroutine; a full queue, a slow OnDelta or a sink error detaches that
// sink only. The authoritative sink's deliveries (or explicit Acks) build
// the acknowledged prefix that an interrupted turn commits. When the
// engine returns, the stream waits for its run-ends and gives every sink
// one RunEndPayload last. A StreamPolicy on the ctx lets delegated runs
// stream to the same sinks as observers.
//
// # Concurrency
//
// Manager, Lease, Session and Turn are safe for concurrent use. Starts and
// resumes of one session are serialized; every other call may run at any
// time. Each turn runs on a goroutine that the turn owns and that ends when
// the turn settles; Manager.Close waits for it (a turn whose engine ignores
// both its interrupt and its ctx is reported, not waited for forever).
// SessionObserver callbacks run on the goroutines of the operations that
// cause them and must not call back into the manager synchronously.
//
// # Errors
//
// Errors carry a fault kind that errors.Is matches: an invalid key, request,
// sink or setting is Validation; an unknown agent is NotFound; a closed or
// draining manager, a closing session or a key being deleted is
// NotAvailable (ErrManagerClosed, ErrManagerDraining, ErrSessionClosing);
// too many sessions is RateLimit. The steer and prompt errors are the
// package's sentinels (ErrSteerTooLarge, ErrSteerClosed, ErrSteerQueueFull,
// ErrPromptUnknown, ErrPromptDuplicate, ErrPromptClosed). A business outcome
// of a turn (failed, interrupted, ...) is a Result, not an error.
package session
