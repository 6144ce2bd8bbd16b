//go:build unix

package wasm

import "syscall"

// reserveBytes maps n bytes of zeroed, lazily committed memory and returns
// them with length 0 and the function that unmaps them. It falls back to
// the Go heap when the mapping fails.
func reserveBytes(n uint64) ([]byte, func()) {
	if n == 0 {
		return nil, nil
	}
	b, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return make([]byte, 0, n), nil
	}
	return b[:0], func() { _ = syscall.Munmap(b) }
}
