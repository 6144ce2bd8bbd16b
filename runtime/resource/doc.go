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
// Input.DepsMany returns them sorted by key.
package resource
