// Package wasmtest builds Go guests for tests: with the local toolchain
// (GOOS=wasip1 GOARCH=wasm, -buildmode=c-shared), once per package per
// test binary, into a directory the test binary owns.
//
//	var guests *wasmtest.Builder
//
//	func TestMain(m *testing.M) { os.Exit(wasmtest.Main(m, &guests)) }
//
//	func TestX(t *testing.T) { bin := guests.Build(t, "testdata/wasm/suite") }
package wasmtest
