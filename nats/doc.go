// Package nats carries a Corral deployment onto NATS, so that several
// nodes (processes, machines) share its events and its sessions.
//
// # Bus
//
// Bus is the event.Bus of one node (resource kind event.Bus, impl nats,
// BusFactory). A node's own subscriptions get what the node publishes
// exactly as a MemoryBus delivers it — before Publish returns, under each
// subscription's backpressure policy — and what the other nodes publish as
// it arrives over NATS. Corral's subject grammar is NATS's, so an event on
// subject s travels on <prefix>.ev.s when it is durable and
// <prefix>.eph.s when it is ephemeral:
//
//   - durable events (every event but the stream deltas, by default) are
//     stored in a JetStream stream; Publish waits for the stream's
//     acknowledgement, asking again with the same message id for as long
//     as its ctx lasts, and SubscribeFrom reads them again from a cursor,
//     across reconnects;
//   - ephemeral events (Config.Ephemeral, the stream deltas by default) go
//     over core NATS: many, small, and repeated in the run's result, they
//     are not worth a disk write each.
//
// Each message names the node that published it: a bus takes none of its
// own node's from NATS (another generation of the same runtime delivers
// its own), and delivers a durable event id once among the last it
// received, as the stream stores it once when a publish is asked again.
//
// # Session ownership
//
// Ownership (Bus.Ownership, and session.OwnershipProvider for the
// runtime) gives one node at a time the turns of a session key, through a
// lease per key in a JetStream key-value bucket: created with a TTL,
// renewed by compare-and-swap, taken over by another node once it lapses.
// A node gives its claim up before the server can let the lease lapse,
// and PutFenced writes only while the lease is still at the claim's
// revision, so a node cut off from NATS can neither keep running a turn
// past its lease nor write after another node took the key.
//
// # Lifecycle
//
// Connect (or the factory) connects, makes sure the stream and the bucket
// exist, and starts the goroutine that receives the other nodes' events.
// Bus.Close releases the node's leases, closes every subscription, stops
// that goroutine and closes the connection; it is idempotent. A cursor
// subscription has a goroutine of its own, stopped by its Close, its ctx
// or the bus's Close; a claim has one that renews it, stopped by Release,
// by its loss or by the bus's Close.
//
// # Errors
//
// A bad configuration is fault.Validation; a server that cannot be
// reached, a publish the stream did not acknowledge, a lost lease and a
// fenced write are fault.NotAvailable; a key held by another node is a
// *session.OwnedError (NotAvailable). After Close, Publish, Subscribe
// and SubscribeFrom return exactly event.ErrBusClosed.
//
// Package natstest runs real NATS servers, alone or clustered, inside a
// test process.
package nats
