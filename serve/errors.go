package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/session"
)

// apiError is an error as the API reports it: an HTTP status, the fault
// kind's name, a message and, for a quota, the quota's key.
type apiError struct {
	status     int
	kind       string
	message    string
	quota      string
	param      string // the request's field at fault, for OpenAI's shape
	retryAfter int    // seconds; 0: no Retry-After
	// inRun: the error is a turn's outcome, not a refusal; a quota the
	// run hit is counted from the run, not by OnQuotaRejected.
	inRun bool
}

// errorOf maps err to its status: Validation 400, Forbidden and
// PolicyDenied 403, NotFound 404, Conflict 409, a quota 429 (with
// Retry-After for a rate), RateLimit 429, NotAvailable 503, Timeout 504,
// anything else 500.
func errorOf(err error) apiError {
	e := errorKindOf(err)
	var pe *paramError
	if errors.As(err, &pe) {
		e.param = pe.param
	}
	return e
}

func errorKindOf(err error) apiError {
	e := apiError{status: http.StatusInternalServerError, kind: fault.Internal.String(), message: err.Error()}
	var so *errStreamOverflow
	if errors.As(err, &so) {
		e.kind = "stream_overflow"
		return e
	}
	var ue *unauthorizedError
	if errors.As(err, &ue) {
		return unauthorized()
	}
	var sq *sessionsQuotaError
	if errors.As(err, &sq) {
		e.status, e.quota, e.kind = http.StatusTooManyRequests, "sessions", fault.BudgetExceeded.String()
		return e
	}
	var he *heldError
	if errors.As(err, &he) {
		return apiError{status: http.StatusTooManyRequests, kind: fault.RateLimit.String(), message: he.Error(),
			quota: quotaHeldRequests, retryAfter: 1}
	}
	var qe *session.QuotaError
	if errors.As(err, &qe) {
		e.status, e.quota = http.StatusTooManyRequests, qe.Quota
		e.kind = fault.KindOr(err, fault.RateLimit).String()
		if qe.RetryAfter > 0 {
			e.retryAfter = int(math.Ceil(qe.RetryAfter.Seconds()))
		}
		return e
	}
	err = fault.FromContext(err, "")
	k := fault.KindOr(err, fault.Internal)
	e.kind = k.String()
	switch k {
	case fault.Validation:
		e.status = http.StatusBadRequest
	case fault.Forbidden, fault.PolicyDenied:
		e.status = http.StatusForbidden
	case fault.NotFound:
		e.status = http.StatusNotFound
	case fault.Conflict:
		e.status = http.StatusConflict
	case fault.RateLimit, fault.BudgetExceeded:
		e.status = http.StatusTooManyRequests
	case fault.NotAvailable, fault.Aborted:
		e.status = http.StatusServiceUnavailable
	case fault.Timeout:
		e.status = http.StatusGatewayTimeout
	case fault.Interrupted:
		e.status = http.StatusConflict
	}
	return e
}

// nativeError is the native API's error body.
type nativeError struct {
	Error nativeErrorBody `json:"error"`
}

type nativeErrorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Quota   string `json:"quota,omitempty"`
}

// writeError answers a native API request with err.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := errorOf(err)
	s.noteError(r, e)
	writeErrorHeaders(w, e)
	writeJSON(w, e.status, nativeError{Error: nativeErrorBody{Kind: e.kind, Message: e.message, Quota: e.quota}})
}

// noteError logs a refusal and tells the quota hook of a quota hit.
func (s *Server) noteError(r *http.Request, e apiError) {
	tenant := tenantOf(r.Context())
	if e.quota != "" && !e.inRun && s.opts.OnQuotaRejected != nil {
		s.opts.OnQuotaRejected(tenant, e.quota)
	}
	level := s.log.Info
	if e.status >= 500 {
		level = s.log.Error
	}
	level("request refused", "method", clipLog(r.Method), "path", clipLog(r.URL.Path), "tenant", tenant,
		"status", e.status, "kind", e.kind, "quota", e.quota, "error", clipLog(e.message))
}

// maxLogValue bounds, in bytes, a value a client or a script chose that
// a log line carries (a path, an error that repeats the request).
const maxLogValue = 512

// clipLog cuts s to maxLogValue bytes at a character's start, marking
// the cut, so that a client cannot make a log line as long as its request
// (REF 11.8.13).
func clipLog(s string) string {
	if len(s) <= maxLogValue {
		return s
	}
	n := maxLogValue
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

func writeErrorHeaders(w http.ResponseWriter, e apiError) {
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="corral"`)
	}
}

// jsonWriter is a buffer with its encoder, which writeJSON reuses.
type jsonWriter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// jsonWriters are the buffers writeJSON encodes into.
var jsonWriters = sync.Pool{New: func() any {
	jw := &jsonWriter{}
	jw.enc = json.NewEncoder(&jw.buf)
	jw.enc.SetEscapeHTML(false)
	return jw
}}

// The header values writeJSON sets, shared: they are set, never changed.
var (
	headerJSON    = []string{"application/json"}
	headerSSE     = []string{"text/event-stream"}
	headerNoCache = []string{"no-cache"}
	headerNo      = []string{"no"}
)

// autoLengthBytes is the size of a body below which net/http declares the
// Content-Length itself: a handler that writes less, without a flush,
// gets it (http.ResponseWriter).
const autoLengthBytes = 1 << 10

// writeJSON writes v as the body with status. The body is encoded first
// and sent with its Content-Length (set here from autoLengthBytes on;
// below it net/http declares it), in one write once the handler returns.
func writeJSON(w http.ResponseWriter, status int, v any) {
	jw := jsonWriters.Get().(*jsonWriter)
	buf := &jw.buf
	buf.Reset()
	if err := jw.enc.Encode(v); err != nil {
		buf.Reset()
		status = http.StatusInternalServerError
		_, _ = buf.WriteString(`{"error":{"kind":"internal","message":"the answer could not be encoded"}}` + "\n")
	}
	h := w.Header()
	h["Content-Type"] = headerJSON
	if buf.Len() >= autoLengthBytes {
		h.Set("Content-Length", strconv.Itoa(buf.Len()))
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	if buf.Cap() <= 64<<10 {
		jsonWriters.Put(jw)
	}
}

// errUnauthorized is a missing or wrong API key.
var errUnauthorized = errors.New("missing or unknown API key: send Authorization: Bearer <key>")

func unauthorized() apiError {
	return apiError{status: http.StatusUnauthorized, kind: "unauthorized", message: errUnauthorized.Error()}
}
