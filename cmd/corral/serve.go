package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/observe"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/serve"
)

// serveOptions is the command line of corral serve.
type serveOptions struct {
	doc   string
	addr  string
	keys  string
	drain time.Duration // how long running turns may finish after a signal
	grace time.Duration // how long interrupted turns may take to settle
	idle  time.Duration // how long a keep-alive connection may stay idle
	json  bool          // logs as JSON lines
	// metricsAddr is the listener of GET /metrics; "" serves none.
	metricsAddr string
	// recordTurns is how many turns' recordings are kept; 0 records none.
	recordTurns int
}

const serveUsage = `usage: corral serve [DOC] [--addr 127.0.0.1:8080] [--keys FILE] [--drain 30s] [--grace 10s] [--log-json]
                    [--metrics-addr 127.0.0.1:9464] [--record-turns 64] [--idle-timeout 2m]
       corral serve hash-key < key

Serve the deployment DOC (default: the embedded demo) over HTTP to the
tenants of the keys file (default: keys.yaml beside DOC; required without
DOC): an OpenAI-compatible API under /v1 and the native session API under
/api (docs/serve.md). SIGTERM or Ctrl-C drains: no new sessions or turns
(503), running turns get --drain to finish, then are interrupted and get
--grace to settle; then the listener closes. --metrics-addr serves
Prometheus metrics at /metrics on a listener of its own (loopback when the
address names no host; off without it). Traces follow the OTEL_*
environment (off unless it asks). The last --record-turns turns are
recorded for GET .../recording (0: none), within 64 MiB of one tenant's
recordings and 256 MiB of all; the tenant that holds the most loses its
oldest first. A connection idle for --idle-timeout between requests is
closed. hash-key prints the form a keys file stores a key in.
`

// parseServeFlags parses the arguments of corral serve.
func parseServeFlags(args []string) (serveOptions, error) {
	o := serveOptions{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "the `ADDRESS` to listen on (loopback unless told otherwise)")
	fs.StringVar(&o.keys, "keys", "", "the keys `FILE` (default: keys.yaml beside DOC)")
	fs.DurationVar(&o.drain, "drain", 30*time.Second, "how long running turns may finish after SIGTERM")
	fs.DurationVar(&o.grace, "grace", 10*time.Second, "how long interrupted turns may take to settle")
	fs.DurationVar(&o.idle, "idle-timeout", 2*time.Minute, "how long a keep-alive connection may stay idle between requests")
	fs.BoolVar(&o.json, "log-json", false, "write logs as JSON lines")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "the `ADDRESS` of the /metrics listener (loopback unless it names a host; none without it)")
	fs.IntVar(&o.recordTurns, "record-turns", defaultRecordTurns, "how many of the latest turns' recordings to keep (0: record none)")
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		o.doc, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fault.Wrap(fault.Validation, err, "serve", "")
	}
	switch rest := fs.Args(); {
	case len(rest) == 1 && o.doc == "":
		o.doc = rest[0]
	case len(rest) > 0:
		return o, fault.New(fault.Validation, "serve", "want at most one document, got %q", rest)
	}
	if o.keys == "" {
		if o.doc == "" {
			return o, fault.New(fault.Validation, "serve", "--keys is required when serving the demo deployment")
		}
		o.keys = filepath.Join(filepath.Dir(o.doc), "keys.yaml")
	}
	if o.drain < 0 || o.grace < 0 {
		return o, fault.New(fault.Validation, "serve", "--drain and --grace must not be negative")
	}
	if o.idle <= 0 {
		return o, fault.New(fault.Validation, "serve", "--idle-timeout must be positive")
	}
	if o.recordTurns < 0 {
		return o, fault.New(fault.Validation, "serve", "--record-turns must not be negative")
	}
	if o.metricsAddr != "" {
		o.metricsAddr = loopbackDefault(o.metricsAddr)
	}
	return o, nil
}

// defaultRecordTurns is --record-turns' default: the recordings of at most
// 64 turns, the tenant that keeps the most losing its oldest first.
const defaultRecordTurns = 64

// loopbackDefault makes an address that names no host (":9464", "9464")
// a loopback one.
func loopbackDefault(addr string) string {
	if !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// serveCommand is corral serve.
func serveCommand(ctx context.Context, args []string, sio stdio) int {
	if len(args) > 0 && args[0] == "hash-key" {
		return hashKey(sio)
	}
	o, err := parseServeFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(sio.out, serveUsage)
		return exitOK
	}
	if err != nil {
		return report(sio.err, err)
	}
	var handler slog.Handler = slog.NewTextHandler(sio.err, nil)
	if o.json {
		handler = slog.NewJSONHandler(sio.err, nil)
	}
	log := slog.New(handler)
	if err := serveDocument(ctx, o, sio, log); err != nil {
		return report(sio.err, err)
	}
	return exitOK
}

// minKeyLen is the length under which hash-key warns that a key could be
// guessed.
const minKeyLen = 16

// hashKey prints the hash of the key on stdin's first line.
func hashKey(sio stdio) int {
	line, err := bufio.NewReader(sio.in).ReadString('\n')
	key := strings.TrimRight(line, "\r\n")
	if key == "" {
		fmt.Fprintf(sio.err, "corral: serve hash-key: no key on stdin (%v)\n", err)
		return exitBadInput
	}
	if strings.IndexFunc(key, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		fmt.Fprintln(sio.err, "corral: serve hash-key: the key has a space or a control character in it, which no Authorization header can carry")
		return exitBadInput
	}
	if utf8.RuneCountInString(key) < minKeyLen {
		fmt.Fprintf(sio.err, "corral: serve hash-key: warning: the key is shorter than %d characters; the server does not limit how many keys a client tries (openssl rand -hex 32 makes a good one)\n", minKeyLen)
	}
	fmt.Fprintln(sio.out, serve.HashKey(key))
	return exitOK
}

// serveDocument builds the runtime, serves it until a signal, then drains
// and closes everything.
func serveDocument(ctx context.Context, o serveOptions, sio stdio, log *slog.Logger) error {
	keys, err := serve.LoadKeys(o.keys)
	if err != nil {
		return err
	}
	doc, cleanup, err := loadDocument(o.doc)
	if err != nil {
		return err
	}
	defer cleanup()
	tp, stopTraces, err := observe.SetupFromEnv(ctx)
	if err != nil {
		return err
	}
	defer func() { // after the runtime closed: its last spans are flushed
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTraces(sctx); err != nil {
			log.Warn("flush the traces", "error", err)
		}
	}()
	rec, err := serveRecorder(o, doc)
	if err != nil {
		return err
	}
	app, err := buildRecording(ctx, doc, rec)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := app.Close(); cerr != nil {
			log.Error("close the runtime", "error", cerr)
		}
	}()
	if err := checkTenants(app, keys, o.keys); err != nil {
		return err
	}
	obs, err := observe.New(ctx, app, observe.Options{TracerProvider: tp, Logger: log})
	if err != nil {
		return err
	}
	defer obs.Close()
	opts := serve.Options{Logger: log, OnQuotaRejected: obs.QuotaRejected, Middleware: obs.HTTPMiddleware()}
	if rec != nil {
		opts.Recordings = rec
	}
	srv, err := serve.New(app, keys, opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	stopMetrics, err := serveMetrics(o, obs, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fault.Wrap(fault.NotAvailable, err, "serve", "listen on %s", o.addr)
	}
	hs := httpServer(srv, o, log)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("listening", "addr", "http://"+ln.Addr().String(), "tenants", keys.Tenants())
	select {
	case err := <-served:
		return fault.Wrap(fault.Internal, err, "serve", "")
	case <-sio.signals:
	case <-ctx.Done():
	}
	return shutdown(hs, srv, served, o, sio, log)
}

// shutdown drains the server while its listener stays open (new sessions
// and turns get 503 and /readyz fails, so that a balancer stops sending
// work, while requests on running turns go on), a second signal cutting
// the drain short; then it closes the listener and the connections.
func shutdown(hs *http.Server, srv *serve.Server, served <-chan error, o serveOptions, sio stdio, log *slog.Logger) error {
	log.Info("draining: no new sessions or turns; running turns may finish", "drain", o.drain, "running_turns", srv.Running())
	drainCtx, cancel := context.WithTimeout(context.Background(), o.drain)
	defer cancel()
	go func() {
		select {
		case <-sio.signals:
			log.Warn("second signal: interrupting the running turns now")
			cancel()
		case <-drainCtx.Done():
		}
	}()
	derr := srv.Drain(drainCtx, o.grace)
	if derr != nil {
		log.Warn("drain", "error", derr)
	}
	shutCtx, shutCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer shutCancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		log.Warn("connections still open after the drain: closing them", "error", err)
		_ = hs.Close()
	}
	<-served
	if derr != nil && fault.Is(derr, fault.Timeout) {
		return derr
	}
	log.Info("stopped")
	return nil
}

// httpServer is the HTTP server of h: a request's headers must arrive
// within 10 seconds, and a connection idle between requests for
// --idle-timeout is closed, so that a client holds no connection it does
// not use (REF 11.4.5).
func httpServer(h http.Handler, o serveOptions, log *slog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: o.idle,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
}

// checkTenants refuses a keys file that names a tenant the document does
// not declare.
func checkTenants(app *runtime.Runtime, keys *serve.Keys, file string) error {
	declared := app.Config().Tenants
	for _, t := range keys.Tenants() {
		if _, ok := declared[t]; !ok && t != agent.DefaultTenant {
			return fault.New(fault.Validation, "serve", "%s: tenant %q is not declared in the document's runtime.tenants", file, t)
		}
	}
	return nil
}

// serveRecorder is the recorder of every turn, keeping --record-turns of
// them; nil when it is 0.
func serveRecorder(o serveOptions, doc *deploy.Document) (*replay.Recorder, error) {
	if o.recordTurns == 0 {
		return nil, nil
	}
	cfg := replay.RecorderConfig{MaxTurns: o.recordTurns}
	if o.doc != "" && doc.File() != "" {
		d, err := replay.Digests(doc.File())
		if err != nil {
			return nil, err
		}
		cfg.Digests = d
	}
	return replay.NewRecorder(cfg), nil
}

// serveMetrics serves GET /metrics on --metrics-addr, if it is set, until
// the returned stop.
func serveMetrics(o serveOptions, obs *observe.Observer, log *slog.Logger) (stop func(), err error) {
	if o.metricsAddr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", o.metricsAddr)
	if err != nil {
		return nil, fault.Wrap(fault.NotAvailable, err, "serve", "listen on %s (--metrics-addr)", o.metricsAddr)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", obs.MetricsHandler())
	hs := httpServer(mux, o, log)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	log.Info("metrics listening", "addr", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		_ = hs.Close()
		<-done
	}, nil
}
