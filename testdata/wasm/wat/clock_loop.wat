;; Reads the WASI realtime clock in a loop until the wall time stops it.
(module
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 1024))
  (func (export "run") (param i32 i32)
    (loop $l (drop (call $clock (i32.const 0) (i64.const 0) (i32.const 8))) (br $l))))
