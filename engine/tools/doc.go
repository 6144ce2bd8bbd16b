// Package tools provides tool assemblies whose tools are declared in the
// deployment document and implemented by scripts: the resource kind
// tool.Assembly, impl "script" (Factory).
//
//	resources:
//	  tools:
//	    kind: tool.Assembly
//	    impl: script
//	    deps: {script_runtime: js}
//	    settings:
//	      tools:
//	        - name: add
//	          description: Adds two numbers.
//	          parameters:
//	            type: object
//	            properties: {a: {type: number}, b: {type: number}}
//	            required: [a, b]
//	          source: return config.a + config.b
//
// # Calls
//
// A call is one sandbox.Invocation of the tool's script in its runtime,
// under the same limits and host ABI as a graph script node: the
// arguments, checked against the tool's schema first (Schema), are the
// script's config; the board is a fresh one of the call's own; the result
// is the board var "result", or what a JavaScript tool returns. Host
// functions go through the batch's ABI, which checks the agent's grants.
// docs/tools.md describes the settings, the argument schemas (JSON Schema
// 2020-12, nothing loaded from outside the schema) and the limits.
//
// # Errors
//
// A call that cannot run or fails (unknown tool, bad arguments, a script
// error, a limit, a refused capability) is a tool result with IsError set,
// which the model sees; the next call of the batch runs as usual. Execute
// itself fails only when its context ends or a tool signals an interrupt.
// Building fails with Validation errors that name the setting
// (settings.tools[1].parameters: ...).
//
// # Concurrency
//
// An Assembly is immutable and safe for concurrent use; the calls of one
// batch run one after the other, in the model's order, so that the run's
// journal is in a deterministic order.
package tools
