;; Tries to open a file through WASI: there is no directory to open it in.
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "corral" "signal.error" (func $fail (param i32 i32) (result i64)))
  (data (i32.const 0) "[{\"kind\":\"validation\",\"message\":\"host call failed\"}]")
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 100) "/etc/passwd")
  (func (export "run") (param i32 i32)
    (if (i32.eqz (call $open (i32.const 3) (i32.const 0) (i32.const 100) (i32.const 11) (i32.const 0)
          (i64.const 2) (i64.const 2) (i32.const 0) (i32.const 200)))
      (then (drop (call $fail (i32.const 0) (i32.const 52)))))))
