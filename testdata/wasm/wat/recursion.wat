;; Calls itself without end.
(module
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (func $f (param i64) (result i64) (i64.add (call $f (i64.add (local.get 0) (i64.const 1))) (i64.const 1)))
  (func (export "run") (param i32 i32) (drop (call $f (i64.const 0)))))
