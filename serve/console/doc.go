// Package console is the web console of `corral serve`: a page, a style
// sheet and JavaScript modules embedded in the binary, served by Handler
// at GET / and under /console/. The page signs in with a tenant key (kept
// in the browser tab's sessionStorage, never in a URL), lists the tenant's
// agents and sessions, starts turns and follows their event streams
// (fetch with a stream reader, resuming with Last-Event-ID when the
// connection drops), steers, interrupts and answers them, shows their
// event timeline and downloads their recordings. Every API call it makes
// carries the key as "Authorization: Bearer"; the files themselves need
// no key.
//
// # Security
//
// Every response of Handler carries a strict Content-Security-Policy: only
// the console's own scripts, styles and API (no inline script or style,
// no other origin), no framing, and Trusted Types enforced so that no
// script may assign markup to innerHTML. The page renders everything the
// server sends (agent names, model output, event payloads) as text.
//
// # Concurrency
//
// Handler's handler is safe for concurrent use; the files are read-only.
package console
