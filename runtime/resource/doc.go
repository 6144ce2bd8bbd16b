// Package resource is the contract between a deployment document and the Go
// code that builds what it declares.
//
// A Factory builds one kind of resource (an event bus, a checkpoint store, an
// agent engine) from an Input: its settings as JSON, its dependencies as
// built values, and a Loader for file references. Its Spec says what it
// builds (kind and impl) and which dependencies it takes.
//
// # Registry
//
// A Registry is a value: NewRegistry starts empty, and an application
// registers exactly the factories it wants. There is no global registry and
// no self-registration in init. Register validates a factory's Spec and
// refuses a duplicate (kind, impl) with a Conflict error; MustRegister is for
// main functions and tests. Listings are sorted.
//
// # Lifecycle of a value
//
// New decodes its settings strictly (DecodeSettings, DecodeTyped: unknown
// keys are errors), validates them and provisions the value. A value may
// implement io.Closer (closed in reverse build order), Wireable (called once
// every value is built), ItemResolver (so that documents can reference
// "name/item") and DeploymentBinder.
//
// # Dependencies
//
// A DepSpec names a dependency role and the contract its value must meet.
// A Many dependency accepts the document keys "name" and "name.<suffix>";
// Input.DepsMany returns them sorted by key. Deploy checks the document's
// deps against the Spec before New: every key must match a declared name
// (or a Many prefix), every Required dep must be bound, and a dep bound to
// an external dependency must declare that dependency's contract as its
// Type.
//
// # Settings and references
//
// Settings reach New as JSON. A settings value that is exactly {file: path}
// or {embed: name} is a reference (SourceOf); deploy loads a whole-subtree
// reference before New, and factories resolve nested ones with
// Input.ResolveText, Input.ResolveDocument or Input.Resolve. YAMLToJSON and
// NodeValue convert YAML to JSON and refuse what JSON cannot hold.
// Input.ExpandSettings expands ${env:NAME} and the other forms of the
// Loader in every string value; it is opt-in.
//
// # Errors
//
// Every error carries a fault kind: Validation for a bad Spec or bad
// settings, Conflict for a duplicate registration, NotAvailable when a
// value built outside a document asks for a reference.
//
// # Concurrency
//
// A Registry is safe for concurrent use. Factories may be called from
// several goroutines, one New per value.
package resource
