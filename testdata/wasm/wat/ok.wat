;; Sets the board var ok to true.
(module
  (import "corral" "board.setVar" (func $set (param i32 i32) (result i64)))
  (memory (export "memory") 1)
  (func (export "corral_abi_version") (result i32) (i32.const 1))
  (func (export "corral_alloc") (param i32) (result i32) (i32.const 4096))
  (data (i32.const 0) "[\"ok\",true]")
  (func (export "run") (param i32 i32) (drop (call $set (i32.const 0) (i32.const 11)))))
