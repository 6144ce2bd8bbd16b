package wasm

// The attack modules of the tests are hand-written WebAssembly text; each
// is committed with its compiled module. Rebuild them with wat2wasm (the
// wabt package of Debian) after changing one; TestWatModulesCurrent checks
// that they match.
//
//go:generate sh ../../testdata/wasm/wat/build.sh
