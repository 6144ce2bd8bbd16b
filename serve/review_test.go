package serve_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

// REF 11.8.8
// A body of the wrong JSON types is 400 with a message that names the
// field and the JSON type it wants, never a Go type or field name.
func TestBodyTypeErrorsNameFieldsNotGoTypes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "echo")
	for _, c := range []struct{ path, body, field string }{
		{"/api/sessions", `{"agent":7}`, `"agent"`},
		{"/api/sessions/" + sid + "/turns", `{"text":"x","inputs":"not an object"}`, `"inputs"`},
		{"/api/sessions/" + sid + "/turns", `{"message":{"role":"user","parts":"x"}}`, `"message.parts"`},
		{"/api/sessions/" + sid + "/turns", `{"text":"x","metadata":{"a":1}}`, `"metadata"`},
		{"/api/sessions/" + sid + "/turns", `{"text":`, "unexpected end"},
		{"/api/sessions/" + sid + "/turns", `{"text":"x"} garbage`, "more than one JSON value"},
		{"/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"x"}],"stream":"yes"}`, `"stream"`},
		{"/v1/chat/completions", `{"model":"echo","messages":{}}`, `"messages"`},
	} {
		r := ts.do(http.MethodPost, c.path, acmeKey, c.body)
		assert.Equal(t, http.StatusBadRequest, r.status, "%s %s: %s", c.path, c.body, r.body)
		var body struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(r.body, &body), "%s", r.body)
		msg := body.Error.Message
		assert.Contains(t, msg, c.field, "%s: the message names the field", c.body)
		for _, leak := range []string{"Go struct", "Go value", "serve.", "turnRequest", "openRequest", "chatRequest", "interface {}", "map[string]", "[]message", "json: "} {
			assert.False(t, strings.Contains(msg, leak), "%s: the message shows %q: %s", c.body, leak, msg)
		}
	}
}
