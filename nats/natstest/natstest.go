// Package natstest runs real NATS servers, with JetStream, inside a test
// process: one server, or a cluster of servers on loopback. Tests of the
// nats package and of runtimes built on it use it; it needs nothing
// installed.
//
// A Server keeps its address and its store across Restart, so a client
// that reconnects finds the same server with the same streams. Shutdown
// and Close are idempotent; every server is shut down when the test ends.
package natstest

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// ready is how long a server may take to accept connections, and a
// cluster to elect its JetStream leader. It is generous on purpose: a
// healthy server is ready at once.
const ready = 30 * time.Second

// Server is one embedded NATS server with JetStream.
type Server struct {
	t    testing.TB
	opts server.Options

	mu  sync.Mutex
	srv *server.Server
}

// Run starts one server with JetStream on a random loopback port, its
// store in a directory of the test. It fails the test if the server does
// not start.
func Run(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, opts: baseOptions(t, "n1")}
	s.opts.Port = freePort(t)
	s.start()
	return s
}

// Cluster starts n servers with JetStream clustered on loopback, each
// routed to every other, and waits until the cluster has a JetStream meta
// leader.
func Cluster(t testing.TB, n int) []*Server {
	t.Helper()
	routePorts := make([]int, n)
	for i := range routePorts {
		routePorts[i] = freePort(t)
	}
	out := make([]*Server, n)
	for i := range n {
		s := &Server{t: t, opts: baseOptions(t, fmt.Sprintf("n%d", i+1))}
		s.opts.Port = freePort(t)
		s.opts.Cluster = server.ClusterOpts{Name: "corral", Host: "127.0.0.1", Port: routePorts[i]}
		for j, p := range routePorts {
			if j != i {
				s.opts.Routes = append(s.opts.Routes, server.RoutesFromStr(fmt.Sprintf("nats://127.0.0.1:%d", p))...)
			}
		}
		out[i] = s
	}
	var wg sync.WaitGroup
	for _, s := range out {
		wg.Go(s.start)
	}
	wg.Wait()
	waitLeader(t, out)
	return out
}

func baseOptions(t testing.TB, name string) server.Options {
	return server.Options{
		ServerName: name,
		Host:       "127.0.0.1",
		JetStream:  true,
		StoreDir:   filepath.Join(t.TempDir(), name),
		NoLog:      true,
		NoSigs:     true,
	}
}

func (s *Server) start() {
	s.t.Helper()
	opts := s.opts
	srv, err := server.NewServer(&opts)
	if err != nil {
		s.t.Errorf("natstest: new server %s: %v", s.opts.ServerName, err)
		return
	}
	log := &fatalLog{}
	srv.SetLogger(log, false, false)
	go srv.Start()
	if err := waitReady(srv, log); err != nil {
		srv.Shutdown()
		s.t.Errorf("natstest: server %s (port %d, route port %d): %v", s.opts.ServerName, s.opts.Port, s.opts.Cluster.Port, err)
		return
	}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	s.t.Cleanup(s.Shutdown)
}

// waitReady waits until srv accepts connections; it returns at once with
// the server's fatal error (a port it could not bind) if it logs one.
func waitReady(srv *server.Server, log *fatalLog) error {
	deadline := time.Now().Add(ready)
	for time.Now().Before(deadline) {
		if srv.ReadyForConnections(50 * time.Millisecond) {
			return nil
		}
		if err := log.err(); err != nil {
			return err
		}
	}
	if err := log.err(); err != nil {
		return err
	}
	return fmt.Errorf("not ready within %s", ready)
}

// fatalLog is a server's logger that keeps its first fatal error and
// drops everything else.
type fatalLog struct {
	mu    sync.Mutex
	fatal error
}

func (l *fatalLog) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

func (l *fatalLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fatal == nil {
		l.fatal = fmt.Errorf(format, v...)
	}
}

func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

// URL returns the server's client URL, the same across restarts.
func (s *Server) URL() string {
	return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port)
}

// Name returns the server's name (n1, n2, ...).
func (s *Server) Name() string { return s.opts.ServerName }

// Shutdown stops the server and waits until it has stopped; its clients
// lose their connection. It is idempotent.
func (s *Server) Shutdown() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart shuts the server down, if it runs, and starts it again on the
// same address with the same store.
func (s *Server) Restart() {
	s.t.Helper()
	s.Shutdown()
	s.start()
}

// Running reports whether the server runs.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv != nil
}

// URLs returns the client URLs of servers joined by commas, the form a
// client takes to know every server of a cluster.
func URLs(servers []*Server) string {
	out := ""
	for i, s := range servers {
		if i > 0 {
			out += ","
		}
		out += s.URL()
	}
	return out
}

// waitLeader waits until one server of the cluster is the JetStream meta
// leader that knows every server as a peer, and every server sees the
// others as routes.
func waitLeader(t testing.TB, servers []*Server) {
	t.Helper()
	deadline := time.Now().Add(ready)
	for time.Now().Before(deadline) {
		leader, routed := false, true
		for _, s := range servers {
			s.mu.Lock()
			srv := s.srv
			s.mu.Unlock()
			if srv == nil {
				t.Fatalf("natstest: server %s is not running", s.Name())
			}
			// the leader knows every server as a JetStream peer with
			// current stats: only then can it place a replicated stream
			leader = leader || (srv.JetStreamIsLeader() && len(srv.JetStreamClusterPeers()) == len(servers))
			routed = routed && srv.NumRoutes() >= len(servers)-1
		}
		if leader && routed {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("natstest: no JetStream leader within %s", ready)
}
