package natstest

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a server, and can cut them: a client
// that connects through it can be partitioned from the server while the
// server, and every other client, carries on.
type Proxy struct {
	t      testing.TB
	target string
	l      net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy listens on a random loopback port and forwards to target
// (host:port, or a nats:// URL). It is closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("natstest: proxy listen: %v", err)
	}
	if len(target) > 7 && target[:7] == "nats://" {
		target = target[7:]
	}
	p := &Proxy{t: t, target: target, l: l, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.Close)
	return p
}

// URL returns the proxy's address as a NATS URL.
func (p *Proxy) URL() string { return "nats://" + p.l.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.forward(c) })
	}
}

func (p *Proxy) forward(c net.Conn) {
	defer p.drop(c)
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = s.Close()
		return
	}
	p.conns[s] = struct{}{}
	p.mu.Unlock()
	defer p.drop(s)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done
}

func (p *Proxy) drop(c net.Conn) {
	_ = c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut closes every forwarded connection and refuses new ones until Heal:
// the clients behind the proxy are partitioned from the server.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Heal lets connections through again.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close cuts every connection, stops listening and waits for the
// forwarding goroutines. It is idempotent.
func (p *Proxy) Close() {
	p.Cut()
	if err := p.l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		p.t.Logf("natstest: proxy close: %v", err)
	}
	p.wg.Wait()
}
