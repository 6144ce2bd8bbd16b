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

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/serve"
)

// serveOptions is the command line of corral serve.
type serveOptions struct {
	doc   string
	addr  string
	keys  string
	drain time.Duration // how long running turns may finish after a signal
	grace time.Duration // how long interrupted turns may take to settle
	json  bool          // logs as JSON lines
}

const serveUsage = `usage: corral serve [DOC] [--addr 127.0.0.1:8080] [--keys FILE] [--drain 30s] [--grace 10s] [--log-json]
       corral serve hash-key < key

Serve the deployment DOC (default: the embedded demo) over HTTP to the
tenants of the keys file (default: keys.yaml beside DOC; required without
DOC): an OpenAI-compatible API under /v1 and the native session API under
/api (docs/serve.md). SIGTERM or Ctrl-C drains: no new sessions or turns
(503), running turns get --drain to finish, then are interrupted and get
--grace to settle; then the listener closes. hash-key prints the form a
keys file stores a key in.
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
	fs.BoolVar(&o.json, "log-json", false, "write logs as JSON lines")
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
	return o, nil
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

// hashKey prints the hash of the key on stdin's first line.
func hashKey(sio stdio) int {
	line, err := bufio.NewReader(sio.in).ReadString('\n')
	key := strings.TrimRight(line, "\r\n")
	if key == "" {
		fmt.Fprintf(sio.err, "corral: serve hash-key: no key on stdin (%v)\n", err)
		return exitBadInput
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
	app, err := build(ctx, doc)
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
	srv, err := serve.New(app, keys, serve.Options{Logger: log})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fault.Wrap(fault.NotAvailable, err, "serve", "listen on %s", o.addr)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
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
