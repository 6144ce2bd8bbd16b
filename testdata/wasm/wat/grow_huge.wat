;; Asks for nearly 4 GiB of memory at once, then traps when refused.
(module
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "run") (param i32 i32)
    (if (i32.eq (memory.grow (i32.const 65000)) (i32.const -1)) (then unreachable))))
