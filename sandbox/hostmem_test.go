package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The ceiling's sources: MemTotal of meminfo; a cgroup's memory.max (v2)
// or memory.limit_in_bytes (v1), at the process's own cgroup or the
// hierarchy's root, the lowest of them; "max" and v1's near-MaxInt64 mean
// no limit.
func TestHostMemorySources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(rel, text string) string {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	meminfo := write("meminfo", "MemTotal:       24683996 kB\nMemFree:        1 kB\n")
	require.Equal(t, int64(24683996)<<10, memTotal(meminfo))
	require.Zero(t, memTotal(filepath.Join(dir, "absent")))

	root := filepath.Join(dir, "cg")
	self := write("self-v2", "0::/pod/app\n")
	write("cg/pod/app/memory.max", "1073741824\n")
	require.Equal(t, int64(1<<30), cgroupLimit(self, root))
	write("cg/pod/app/memory.max", "max\n")
	require.Zero(t, cgroupLimit(self, root), "max is no limit")

	self = write("self-v1", "4:memory:/job\n1:cpu:/\n")
	write("cg/memory/job/memory.limit_in_bytes", "9223372036854771712\n")
	require.Zero(t, cgroupLimit(self, root), "v1's unlimited")
	write("cg/memory/memory.limit_in_bytes", "536870912\n")
	require.Equal(t, int64(512<<20), cgroupLimit(self, root), "the root's limit")
	write("cg/memory/job/memory.limit_in_bytes", "268435456\n")
	require.Equal(t, int64(256<<20), cgroupLimit(self, root), "the lowest")
}

// The ceiling is never more than the machine's memory, and follows Go's
// memory limit when one is set.
func TestHostMemoryCeiling(t *testing.T) {
	machine, _ := hostMemory()
	if machine == 0 {
		t.Skip("no /proc/meminfo")
	}
	c := HostMemoryCeiling()
	require.Positive(t, c)
	require.LessOrEqual(t, c, machine)
}
