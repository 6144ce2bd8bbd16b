package natstest

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ports come from below the kernel's ephemeral range, where no outgoing
// connection takes its local port, and none is handed out twice.
func TestFreePortsAreBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low-lowestPort < 1000 {
		t.Skipf("the ephemeral range starts at %d: ports come from the kernel", low)
	}
	seen := map[int]bool{}
	for range 50 {
		p := freePort(t)
		assert.GreaterOrEqual(t, p, lowestPort)
		assert.Less(t, p, low)
		assert.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
	}
}

// recordTB keeps the errors a server reports instead of failing the test.
type recordTB struct {
	testing.TB
	errs []string
}

func (r *recordTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// A server whose port is taken says so, naming the port, instead of
// waiting out its readiness deadline.
func TestPortTakenIsReported(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	rec := &recordTB{TB: t}
	s := &Server{t: rec, opts: baseOptions(t, "n1")}
	s.opts.Port = l.Addr().(*net.TCPAddr).Port
	s.start()
	assert.False(t, s.Running())
	require.Len(t, rec.errs, 1)
	assert.Contains(t, rec.errs[0], fmt.Sprintf("port %d", s.opts.Port))
	assert.True(t, strings.Contains(rec.errs[0], "address already in use"), rec.errs[0])
}
