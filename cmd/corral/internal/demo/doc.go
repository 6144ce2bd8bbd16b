// Package demo holds Corral's demo deployment: the document that
// `corral run` and `corral validate` use when no document is given.
//
// The deployment is a directory: deploy.yaml (resources, the agent "demo",
// the runtime section), graph.yaml (the agent's graph), scripts/ (the
// JavaScript of its script nodes), replies.yaml (the scripted model's
// replies) and tools/ (the JavaScript of its tool). FS serves the same files, embedded in the
// binary, so the demo runs offline from any directory; Extract writes
// them to a directory of the caller's choosing, where file references in
// the documents resolve.
//
// The demo agent streams a greeting, asks the user what to call them
// (host.askUser), takes in everything steered to the turn while it ran
// (host.drainSteer), lets the scripted model call the word_count tool on
// what the user said and answer from its result, all streamed, and closes
// with a line that shows the answer and the steered lines.
package demo
