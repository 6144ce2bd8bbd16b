//go:build !unix

package docfile

import "os"

// openFlags open read-only; systems without O_NONBLOCK have no named pipes
// that block an open in the file system.
const openFlags = os.O_RDONLY
