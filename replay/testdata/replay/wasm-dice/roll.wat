;; A WebAssembly node that reads its WASI random stream and wall clock and
;; streams both as hex: a replay must reproduce them, since the stream is
;; seeded from the run id and host.random and the clock is host.now.
;; roll.wasm is its compiled form: wat2wasm roll.wat -o roll.wasm.
(module
  (import "wasi_snapshot_preview1" "random_get" (func $rand (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (import "host" "emit" (func $emit (param i32 i32) (result i64)))
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 0) "0123456789abcdef")
  (data (i32.const 128) "[\"token\",\"")
  (data (i32.const 170) "\"]")
  (func (export "run") (param i32 i32)
    (local $i i32) (local $b i32)
    (drop (call $rand (i32.const 64) (i32.const 8)))
    (drop (call $clock (i32.const 0) (i64.const 0) (i32.const 72)))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (i32.const 16)))
        (local.set $b (i32.load8_u (i32.add (i32.const 64) (local.get $i))))
        (i32.store8 (i32.add (i32.const 138) (i32.shl (local.get $i) (i32.const 1)))
          (i32.load8_u (i32.shr_u (local.get $b) (i32.const 4))))
        (i32.store8 (i32.add (i32.const 139) (i32.shl (local.get $i) (i32.const 1)))
          (i32.load8_u (i32.and (local.get $b) (i32.const 15))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (drop (call $emit (i32.const 128) (i32.const 44)))))
