package natstest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A port the kernel picks for ":0" comes from its ephemeral range, from
// which every outgoing connection of every process on the machine also
// takes its local port. Such a port, free when it was found, can be taken
// before the server binds it, or between a Shutdown and a Restart, and the
// server then never listens. Servers' ports are therefore drawn below the
// ephemeral range, where only explicit binds go, and checked free; no port
// is handed out twice in one process.

// lowestPort is the least port drawn: below it are well-known services.
const lowestPort = 10000

var (
	portsMu sync.Mutex
	handed  = map[int]bool{}
)

// freePort returns a loopback port below the ephemeral range that was
// free a moment ago and that this process has not handed out before. Where
// the range cannot be read, or leaves no room below it, it asks the kernel.
func freePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	if top := ephemeralLow(); top-lowestPort >= 1000 {
		for range 200 {
			p := lowestPort + rand.IntN(top-lowestPort)
			if !handed[p] && bindable(p) {
				handed[p] = true
				return p
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: find a free port: %v", err)
	}
	defer l.Close()
	p := l.Addr().(*net.TCPAddr).Port
	handed[p] = true
	return p
}

// ephemeralLow returns the first port of the kernel's ephemeral range, or
// 0 where it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	low, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return low
}

// bindable reports whether a listener can be bound to the loopback port.
func bindable(p int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
