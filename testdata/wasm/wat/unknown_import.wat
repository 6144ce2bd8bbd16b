;; Imports a host function that does not exist.
(module
  (import "host" "exec" (func $exec (param i32 i32) (result i64)))
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "run") (param i32 i32) (drop (call $exec (i32.const 0) (i32.const 0)))))
