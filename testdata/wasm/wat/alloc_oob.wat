;; Its allocator answers with a buffer outside its memory.
(module
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 0xfffffff0))
  (func (export "run") (param i32 i32)))
