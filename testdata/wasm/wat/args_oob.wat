;; Passes host calls pointers and lengths outside its memory: each must
;; fail cleanly, and then the module reports the failure.
(module
  (import "host" "emit" (func $emit (param i32 i32) (result i64)))
  (import "corral" "signal.error" (func $fail (param i32 i32) (result i64)))
  (data (i32.const 0) "[{\"kind\":\"validation\",\"message\":\"host call failed\"}]")
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "ptr_past_end") (param i32 i32) (local $r i64)
    (local.set $r (call $emit (i32.const 0xfffffff0) (i32.const 16)))
    (if (i32.wrap_i64 (i64.shr_u (local.get $r) (i64.const 32))) (then (drop (call $fail (i32.const 0) (i32.const 52))))))
  (func (export "range_across_end") (param i32 i32) (local $r i64)
    (local.set $r (call $emit (i32.const 65530) (i32.const 64)))
    (if (i32.wrap_i64 (i64.shr_u (local.get $r) (i64.const 32))) (then (drop (call $fail (i32.const 0) (i32.const 52))))))
  (func (export "length_huge") (param i32 i32) (local $r i64)
    (local.set $r (call $emit (i32.const 16) (i32.const 0xffffffff)))
    (if (i32.wrap_i64 (i64.shr_u (local.get $r) (i64.const 32))) (then (drop (call $fail (i32.const 0) (i32.const 52)))))))
