// Package hostwrap puts a deployment's delegation service on every turn
// host: hostwrap.Wrap(factory, result) finds the one delegation.Service of
// the deployment and returns a host factory whose hosts offer it through
// delegation.ServiceFromHost, at the depth of the run the host is built
// for. It is meant for runtime.Builder.WithResultHostFactory:
//
//	b.WithResultHostFactory(hostwrap.Decorate)
//
// # Errors
//
// A deployment with more than one delegation.Service is a Conflict; one
// with none leaves the factory unchanged. A nil factory or result is a
// Validation error.
package hostwrap
