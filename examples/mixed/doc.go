// Package mixed is an example deployment whose graph mixes a JavaScript
// node and a WebAssembly node (a Go guest): deploy.yaml, the guest in
// guest/, and a test that builds the guest and runs a turn.
package mixed
