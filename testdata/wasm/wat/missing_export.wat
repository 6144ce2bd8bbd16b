;; Has no allocator.
(module
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "run") (param i32 i32)))
