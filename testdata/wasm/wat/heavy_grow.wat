;; A module with a start routine (its instances are reused within a run):
;; its first call grows the memory to about 60 MiB and fills it; a later
;; call traps unless the memory still holds it.
(module
  (memory (export "memory") 1)
  (global $n (mut i32) (i32.const 0))
  (func (export "_initialize"))
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 16))
  (func (export "run") (param i32 i32)
    (if (i32.eqz (global.get $n)) (then
      (drop (memory.grow (i32.const 950)))
      (memory.fill (i32.const 0) (i32.const 7) (i32.const 62259200))))
    (if (i32.and (i32.ne (global.get $n) (i32.const 0)) (i32.lt_u (memory.size) (i32.const 900))) (then unreachable))
    (if (i32.and (i32.ne (global.get $n) (i32.const 0)) (i32.ne (i32.load8_u (i32.const 62259000)) (i32.const 7))) (then unreachable))
    (global.set $n (i32.add (global.get $n) (i32.const 1)))))
