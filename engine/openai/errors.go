package openai

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	goopenai "github.com/sashabaranov/go-openai"
)

// StatusError is a failure the server answered with an HTTP status. It
// carries the fault kind of the status (KindOfStatus), so errors.Is(err,
// fault.RateLimit) holds for a 429, and the facts a caller may act on.
type StatusError struct {
	Status     int           // the HTTP status
	Message    string        // the server's message, abbreviated
	RetryAfter time.Duration // the server's Retry-After, 0 when absent
	Attempts   int           // how many attempts the call made
	kind       *fault.Kind
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("status %d", e.Status)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return s
}

// Unwrap exposes the kind.
func (e *StatusError) Unwrap() error { return e.kind }

// KindOfStatus maps an HTTP status to an error kind: 400 and 422
// Validation, 401 and 403 Forbidden, 404 NotFound, 408 and 504 Timeout,
// 409 Conflict, 429 RateLimit, any other status NotAvailable.
func KindOfStatus(status int) *fault.Kind {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		return fault.Validation
	case http.StatusUnauthorized, http.StatusForbidden:
		return fault.Forbidden
	case http.StatusNotFound:
		return fault.NotFound
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return fault.Timeout
	case http.StatusConflict:
		return fault.Conflict
	case http.StatusTooManyRequests:
		return fault.RateLimit
	}
	return fault.NotAvailable
}

// retryableStatus reports whether an attempt that failed with status may
// be retried: 408, 429 and every 5xx.
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// statusErrorOf turns an error of the SDK into a *StatusError when it
// holds an HTTP status, with the Retry-After of header.
func statusErrorOf(err error, header http.Header) (*StatusError, bool) {
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	se := &StatusError{}
	switch {
	case errors.As(err, &apiErr) && apiErr.HTTPStatusCode > 0:
		se.Status, se.Message = apiErr.HTTPStatusCode, apiErr.Message
	case errors.As(err, &reqErr) && reqErr.HTTPStatusCode > 0:
		se.Status, se.Message = reqErr.HTTPStatusCode, strings.TrimSpace(string(reqErr.Body))
		if se.Message == "" && reqErr.Err != nil {
			se.Message = reqErr.Err.Error()
		}
	default:
		return nil, false
	}
	se.Message = abbreviate(se.Message, 300)
	se.RetryAfter = retryAfter(header, time.Now())
	se.kind = KindOfStatus(se.Status)
	return se, true
}

// retryAfter reads a Retry-After header: delay seconds or an HTTP date.
// A missing or malformed header, or a date in the past, gives 0.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 || n > 24*3600 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func abbreviate(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
