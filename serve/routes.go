package serve

import (
	"context"
	_ "embed"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/serve/console"
)

//go:embed openapi.json
var openAPI []byte

type tenantKey struct{}

// tenantOf is the authenticated tenant of a request's ctx, or "".
func tenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// routes builds the mux: health, the OpenAPI document and the console's
// files open, every other route behind a key.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", keyless(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}))
	mux.Handle("GET /readyz", keyless(s.readyz))
	mux.Handle("GET /openapi.json", keyless(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	}))
	mux.Handle("GET /{$}", keyless(console.Handler().ServeHTTP)) // the web console, without a key; its API calls carry one
	mux.Handle("GET "+console.AssetPrefix, keyless(console.Handler().ServeHTTP))
	if s.opts.Metrics != nil {
		mux.Handle("GET /metrics", keyless(s.opts.Metrics.ServeHTTP))
	}
	openai := func(h http.HandlerFunc) http.Handler { return s.authenticate(h, s.writeOpenAIError) }
	mux.Handle("GET /v1/models", openai(s.listModels))
	mux.Handle("GET /v1/models/{model}", openai(s.getModel))
	mux.Handle("POST /v1/chat/completions", openai(s.chatCompletions))
	mux.Handle("/v1/", openai(s.noV1Route)) // what /v1 does not have, in OpenAI's error shape
	mux.Handle("/v1", openai(s.noV1Route))
	native := func(h http.HandlerFunc) http.Handler { return s.authenticate(h, s.writeError) }
	mux.Handle("GET /api/agents", native(s.listAgents))
	mux.Handle("POST /api/sessions", native(s.openSession))
	mux.Handle("GET /api/sessions", native(s.listSessions))
	mux.Handle("GET /api/sessions/{sid}", native(s.getSession))
	mux.Handle("DELETE /api/sessions/{sid}", native(s.deleteSession))
	mux.Handle("POST /api/sessions/{sid}/turns", native(s.startNativeTurn))
	mux.Handle("GET /api/sessions/{sid}/turns", native(s.listTurns))
	mux.Handle("GET /api/sessions/{sid}/turns/{tid}", native(s.getTurn))
	mux.Handle("GET /api/sessions/{sid}/turns/{tid}/wait", native(s.waitTurn))
	mux.Handle("GET /api/sessions/{sid}/turns/{tid}/events", native(s.streamTurn))
	mux.Handle("POST /api/sessions/{sid}/turns/{tid}/steer", native(s.steerTurn))
	mux.Handle("POST /api/sessions/{sid}/turns/{tid}/interrupt", native(s.interruptTurn))
	mux.Handle("POST /api/sessions/{sid}/turns/{tid}/prompts/{pid}", native(s.answerPrompt))
	mux.Handle("GET /api/sessions/{sid}/turns/{tid}/recording", native(s.getRecording))
	mux.Handle("/", native(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fault.New(fault.NotFound, "serve", "no route %s %s", r.Method, r.URL.Path))
	}))
	var h http.Handler = mux
	if s.opts.Middleware != nil {
		h = s.opts.Middleware(h)
	}
	return h
}

// authenticate admits a request whose Authorization bearer key is a
// tenant's (401 otherwise) and puts the tenant on its ctx; it bounds the
// body.
func (s *Server) authenticate(h http.HandlerFunc, writeErr func(http.ResponseWriter, *http.Request, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, ok := bearerKey(r.Header.Values("Authorization"))
		tenant, found := s.keys.Tenant(key)
		if !ok || !found {
			skipBody(w, r)
			writeErr(w, r, errUnauthorizedKind)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
		if r.ContentLength != 0 { // a body: a client must send it within BodyReadTimeout
			b := &deadlineBody{ReadCloser: r.Body, rc: *http.NewResponseController(w)}
			if b.rc.SetReadDeadline(time.Now().Add(s.opts.BodyReadTimeout)) == nil {
				r.Body = b
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

// noV1Route answers a request under /v1 that no route takes, in OpenAI's
// error shape: 405 with Allow for a path that takes other methods, 404
// otherwise (REF 11.2.6).
func (s *Server) noV1Route(w http.ResponseWriter, r *http.Request) {
	allow := ""
	switch rest, isModel := strings.CutPrefix(r.URL.Path, "/v1/models/"); {
	case r.URL.Path == "/v1/models", isModel && rest != "" && !strings.Contains(rest, "/"):
		allow = "GET, HEAD"
	case r.URL.Path == "/v1/chat/completions":
		allow = http.MethodPost
	}
	if allow == "" {
		s.writeOpenAIError(w, r, fault.New(fault.NotFound, "serve", "no route %s %s", r.Method, r.URL.Path))
		return
	}
	w.Header().Set("Allow", allow)
	e := errorOf(fault.New(fault.Validation, "serve", "%s does not take %s; it takes %s", r.URL.Path, r.Method, allow))
	e.status = http.StatusMethodNotAllowed
	s.noteError(r, e)
	writeJSON(w, e.status, openAIErrorOf(e))
}

// keyless serves a route that needs no key and reads no body.
func keyless(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		skipBody(w, r)
		h(w, r)
	})
}

// skipBody makes the answer to a request whose body will not be read
// close its connection without reading the body: the server would
// otherwise read what the client declared before it answers, for as long
// as the client takes to send it (REF 11.8.9).
func skipBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// bearerKey reads the key of a request's Authorization headers: exactly
// one header, the scheme "Bearer" in any case (RFC 9110 §11.1), one space
// or more, and a key without spaces. Anything else has no key.
func bearerKey(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	scheme, key, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	key = strings.TrimLeft(key, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" || strings.ContainsAny(key, " \t") {
		return "", false
	}
	return key, true
}

// deadlineBody lifts the read deadline of a request's connection once
// its body has been read whole, so that the deadline bounds the body and
// never a stream that follows it. A body that failed keeps the deadline:
// the server's discarding of the rest fails too, and the connection
// closes after the answer.
type deadlineBody struct {
	io.ReadCloser
	rc   http.ResponseController // held by value: one allocation less
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// errUnauthorizedKind is the refusal of a missing or unknown key: it maps
// to 401 in both error shapes.
var errUnauthorizedKind = &unauthorizedError{}

type unauthorizedError struct{}

func (*unauthorizedError) Error() string { return errUnauthorized.Error() }

// readyz is 200 while the server takes turns, 503 once it drains.
func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.Draining() || s.rt.Sessions().Draining() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// agentOf returns the agent id of the tenant, or NotFound (another
// tenant's agent is as unknown as a missing one).
func (s *Server) agentOf(tenant, id string) (*agent.Agent, error) {
	a, ok := s.rt.Agent(id)
	if !ok || a.Definition.TenantID() != tenant {
		return nil, fault.New(fault.NotFound, "serve", "agent %q not found", id)
	}
	return a, nil
}

// agentsOf lists the ids of the tenant's agents, sorted.
func (s *Server) agentsOf(tenant string) []*agent.Agent {
	var out []*agent.Agent
	for _, id := range s.rt.AgentNames() {
		if a, ok := s.rt.Agent(id); ok && a.Definition.TenantID() == tenant {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *agent.Agent) int { return strings.Compare(a.ID, b.ID) })
	return out
}
