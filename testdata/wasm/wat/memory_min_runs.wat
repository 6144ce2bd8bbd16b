;; Declares a 1 GiB minimum memory and fills it from corral_abi_version,
;; which runs while the module is instantiated: the module must be refused
;; before any of its code runs.
(module
  (memory (export "memory") 16384)
  (func (export "corral_abi_version") (result i32)
    (memory.fill (i32.const 0) (i32.const 1) (i32.const 0x3fff0000))
    (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 16))
  (func (export "run") (param i32 i32)))
