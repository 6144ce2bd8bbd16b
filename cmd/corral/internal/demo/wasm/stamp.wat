;; The demo's WebAssembly node, written by hand in the text format: it
;; streams one line through host.emit and sets the board var
;; wasm_checked_in. stamp.wasm is its compiled form; rebuild it with
;; `go generate ./cmd/corral/internal/demo` (wat2wasm, Debian package wabt).
(module
  (import "host" "emit" (func $emit (param i32 i32) (result i64)))
  (import "corral" "board.setVar" (func $set (param i32 i32) (result i64)))
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  ;; The host writes the node's input at 4096; this node does not read it.
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 0) "[\"token\",\"(a WebAssembly node checked in)\\n\"]")
  (data (i32.const 256) "[\"wasm_checked_in\",true]")
  (func (export "run") (param i32 i32)
    (drop (call $emit (i32.const 0) (i32.const 45)))
    (drop (call $set (i32.const 256) (i32.const 24)))))
