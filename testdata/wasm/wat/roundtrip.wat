;; Calls host.random 1000 times and fetches each result: the cost of a
;; host call round trip is the call's time over 1000.
(module
  (import "host" "random" (func $random (param i32 i32) (result i64)))
  (import "corral" "result" (func $result (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "run") (param i32 i32) (local $i i32) (local $r i64)
    (loop $l
      (local.set $r (call $random (i32.const 0) (i32.const 0)))
      (drop (call $result (i32.const 8192) (i32.wrap_i64 (local.get $r))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $l (i32.lt_u (local.get $i) (i32.const 1000))))))
