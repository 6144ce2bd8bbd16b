;; Grows its memory a page at a time until refused, then traps.
(module
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "run") (param i32 i32)
    (loop $l (br_if $l (i32.ne (memory.grow (i32.const 1)) (i32.const -1))))
    unreachable))
