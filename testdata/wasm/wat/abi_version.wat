;; Speaks another version of the host ABI.
(module
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 2))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (func (export "run") (param i32 i32)))
