package sandbox

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// HostMemoryCeiling returns the memory the process as a whole must stay
// under, as the host sets it: Go's memory limit (GOMEMLIMIT or
// debug.SetMemoryLimit) when one is set, else the memory limit of the
// process's cgroup (v2 memory.max, v1 memory.limit_in_bytes) when there is
// one, else the machine's memory (/proc/meminfo MemTotal); never more
// than the machine's memory. It returns 0 when none of them can be read
// (not Linux, no GOMEMLIMIT). The files are read once per process; the
// Go memory limit at each call.
func HostMemoryCeiling() int64 {
	machine, cgroup := hostMemory()
	ceiling := cgroup
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		ceiling = l
	}
	if ceiling <= 0 || (machine > 0 && ceiling > machine) {
		ceiling = machine
	}
	return ceiling
}

// hostMemory is the machine's memory and the process's cgroup limit (0
// when unknown or unlimited), read once.
var hostMemory = sync.OnceValues(func() (machine, cgroup int64) {
	return memTotal("/proc/meminfo"), cgroupLimit("/proc/self/cgroup", "/sys/fs/cgroup")
})

// memTotal reads MemTotal from a meminfo file, in bytes; 0 when unknown.
func memTotal(path string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kib, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || kib <= 0 {
				return 0
			}
			return kib << 10
		}
	}
	return 0
}

// cgroupLimit reads the memory limit of the process's cgroup under root,
// v2 first, then v1; 0 when there is none or it is unlimited. self is the
// process's cgroup file (/proc/self/cgroup): the limit is looked up at
// the process's own cgroup, then at the root of the hierarchy (the
// cgroup namespace of a container).
func cgroupLimit(self, root string) int64 {
	var v2, v1 string // the process's cgroup paths
	if data, err := os.ReadFile(self); err == nil {
		for line := range bytes.Lines(data) {
			parts := strings.SplitN(strings.TrimSpace(string(line)), ":", 3)
			if len(parts) != 3 {
				continue
			}
			switch {
			case parts[0] == "0" && parts[1] == "":
				v2 = parts[2]
			case strings.Contains(","+parts[1]+",", ",memory,"):
				v1 = parts[2]
			}
		}
	}
	limit := int64(0)
	for _, p := range []string{
		filepath.Join(root, v2, "memory.max"), filepath.Join(root, "memory.max"),
		filepath.Join(root, "memory", v1, "memory.limit_in_bytes"), filepath.Join(root, "memory", "memory.limit_in_bytes"),
	} {
		if l := readLimit(p); l > 0 && (limit == 0 || l < limit) {
			limit = l
		}
	}
	return limit
}

// readLimit reads a cgroup limit file: a number of bytes, or "max". A
// missing file, "max" and v1's "unlimited" (a number near MaxInt64) are 0.
func readLimit(path string) int64 {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n <= 0 || n >= math.MaxInt64/2 {
		return 0
	}
	return n
}
