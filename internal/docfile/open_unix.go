//go:build unix

package docfile

import (
	"os"
	"syscall"
)

// openFlags open read-only without blocking: opening a named pipe that no
// one writes to returns at once instead of waiting for a writer.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
