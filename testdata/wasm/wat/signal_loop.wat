;; Calls a host function with malformed arguments forever.
(module
  (import "host" "publish" (func $publish (param i32 i32) (result i64)))
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 0) "[\"a.>\"]")
  (func (export "run") (param i32 i32) (loop $l (drop (call $publish (i32.const 0) (i32.const 7))) (br $l))))
