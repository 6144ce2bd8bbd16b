package serve_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve"
)

// oaError is OpenAI's error body.
type oaError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    string  `json:"code"`
	} `json:"error"`
}

func decodeOAError(t testing.TB, resp *http.Response) oaError {
	t.Helper()
	defer resp.Body.Close()
	var e oaError
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	return e
}

func chatBody(model, text string) string {
	return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}]}`, model, text)
}

// REF 11.1.11 REF 2.1.8
// Completions in sessions of their own, one after another, fill the
// runtime with idle sessions: they no longer lock other tenants out. Once
// max_sessions are held idle, another tenant still opens a session and
// runs a completion, and so does the same tenant.
func TestIdleCompletionSessionsLockNobodyOut(t *testing.T) {
	t.Parallel()
	ts := newTestServerWithAgent(t, serve.Options{}, "",
		"sessions: {resume: true, max_sessions: 4096}", "sessions: {resume: true, max_sessions: 64}")
	for i := range 64 {
		resp := ts.chat(acmeKey, fmt.Sprintf("ctx-%d", i), chatBody("echo", "hi"))
		decodeCompletion(t, resp)
	}
	r := ts.do(http.MethodPost, "/api/sessions", bravoKey, `{"agent":"mirror"}`)
	assert.Equal(t, http.StatusCreated, r.status, "bravo opens a session: %s", r.body)
	resp := ts.chat(bravoKey, "bravo-ctx", chatBody("mirror", "hi"))
	if assert.Equal(t, http.StatusOK, resp.StatusCode, "bravo's completion runs") {
		decodeCompletion(t, resp)
	} else {
		t.Logf("%+v", decodeOAError(t, resp))
	}
	decodeCompletion(t, ts.chat(acmeKey, "ctx-64", chatBody("echo", "hi")))
	// A session evicted for room continues from its stored history.
	c := decodeCompletion(t, ts.chat(acmeKey, "ctx-0", chatBody("echo", "again")))
	assert.Equal(t, "echo: again (3 messages)", c.Choices[0].Message.Content)
}

// REF 11.1.11
// A completion's session counts against the tenant's share of sessions
// like the native API's: a tenant that holds its share is refused a
// completion in a new session, 429 naming the quota, with or without a
// context id, while a completion in a session it holds still runs and
// other tenants are not affected.
func TestCompletionsCountAgainstTheSessionsShare(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{MaxSessionsPerTenant: 2})
	for _, c := range []string{"held-1", "held-2"} {
		r := ts.do(http.MethodPost, "/api/sessions", acmeKey, `{"agent":"echo","context_id":"`+c+`"}`)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	}
	for _, ctxID := range []string{"new", ""} {
		resp := ts.chat(acmeKey, ctxID, chatBody("echo", "hi"))
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "context id %q", ctxID)
		e := decodeOAError(t, resp)
		assert.Equal(t, "rate_limit_error", e.Error.Type)
		assert.Equal(t, "sessions", e.Error.Code)
	}
	decodeCompletion(t, ts.chat(acmeKey, "held-1", chatBody("echo", "hi")))
	decodeCompletion(t, ts.chat(bravoKey, "", chatBody("mirror", "hi")))
}

// REF 11.2.8
// The context id of a completion is bounded as the native API's is: too
// long, with a control character, or not UTF-8, it is a 400 in OpenAI's
// shape, and no turn runs.
func TestCompletionContextIDBounds(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	for name, id := range map[string]string{
		"257 bytes": strings.Repeat("x", serve.MaxContextIDBytes+1),
		"a tab":     "a\tb",
		"not UTF-8": "a\xffb",
	} {
		resp := ts.chat(acmeKey, id, chatBody("echo", "hi"))
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, name)
		e := decodeOAError(t, resp)
		assert.Equal(t, "invalid_request_error", e.Error.Type, name)
		assert.Contains(t, e.Error.Message, serve.HeaderContextID, name)
	}
	decodeCompletion(t, ts.chat(acmeKey, strings.Repeat("x", serve.MaxContextIDBytes), chatBody("echo", "hi")))
}

// REF 11.2.7
// A request for more than one choice is refused, not answered with one;
// OpenAI's error names the field at fault in param.
func TestCompletionParamErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	for _, tc := range []struct {
		name, body, param string
	}{
		{"n 2", `{"model":"echo","n":2,"messages":[{"role":"user","content":"x"}]}`, "n"},
		{"n 0", `{"model":"echo","n":0,"messages":[{"role":"user","content":"x"}]}`, "n"},
		{"no model", `{"messages":[{"role":"user","content":"x"}]}`, "model"},
		{"no messages", `{"model":"echo","messages":[]}`, "messages"},
		{"bad role", `{"model":"echo","messages":[{"role":"user","content":"x"},{"role":"boss","content":"x"}]}`, "messages[1]"},
		{"assistant last", `{"model":"echo","messages":[{"role":"assistant","content":"x"}]}`, "messages"},
		{"unknown model", `{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}`, "model"},
	} {
		resp := ts.chat(acmeKey, "", tc.body)
		status := resp.StatusCode
		e := decodeOAError(t, resp)
		assert.NotEqual(t, http.StatusOK, status, tc.name)
		if assert.NotNil(t, e.Error.Param, tc.name) {
			assert.Equal(t, tc.param, *e.Error.Param, tc.name)
		}
	}
	c := decodeCompletion(t, ts.chat(acmeKey, "", `{"model":"echo","n":1,"messages":[{"role":"user","content":"x"}]}`))
	assert.Len(t, c.Choices, 1, "n 1 is the one choice")
	resp := ts.chat(acmeKey, "", `{"model":`)
	e := decodeOAError(t, resp)
	assert.Nil(t, e.Error.Param, "a body that is not JSON names no field")
}

// REF 11.2.9
// A streamed completion whose turn's events overflowed the log lost some
// of its text: it does not finish "stop" but ends with an error object,
// code stream_overflow, before [DONE].
func TestCompletionStreamOverflowIsNotAStop(t *testing.T) {
	t.Parallel()
	ts := newTestServerWithAgent(t, serve.Options{MaxTurnEventBytes: 4 << 10}, burstAgent)
	resp := ts.chat(acmeKey, "", `{"model":"burst","stream":true,"messages":[{"role":"user","content":"go"}]}`)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var datas []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			datas = append(datas, line)
		}
	}
	require.GreaterOrEqual(t, len(datas), 3)
	require.Equal(t, "[DONE]", datas[len(datas)-1])
	for _, d := range datas {
		assert.NotContains(t, d, `"finish_reason":"stop"`, "a stream that lost deltas does not finish stop")
	}
	var e oaError
	require.NoError(t, json.Unmarshal([]byte(datas[len(datas)-2]), &e), datas[len(datas)-2])
	assert.Equal(t, "stream_overflow", e.Error.Code)
	assert.Contains(t, e.Error.Message, "lost")
}

// REF 11.3.8
// A delete whose stored state cannot be removed answers with the error
// and leaves the session listed and usable; the delete may be tried
// again.
func TestDeleteThatFailsKeepsTheSession(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "echo")
	ts.runEcho(acmeKey, sid, "hi")
	data := filepath.Join(filepath.Dir(ts.path), "data")
	corrupted := 0
	require.Eventually(t, func() bool {
		corrupted = corruptSessionRecords(t, data)
		return corrupted > 0
	}, 30*time.Second, 10*time.Millisecond, "the session's record is stored")

	r := ts.do(http.MethodDelete, "/api/sessions/"+sid, acmeKey, "")
	require.GreaterOrEqual(t, r.status, 400, "the failed delete is reported: %s", r.body)
	assert.Contains(t, r.json(t), "error")
	r = ts.do(http.MethodGet, "/api/sessions/"+sid, acmeKey, "")
	assert.Equal(t, http.StatusOK, r.status, "the session is still there: %s", r.body)
	r = ts.do(http.MethodGet, "/api/sessions", acmeKey, "")
	assert.Contains(t, string(r.body), sid, "and listed")
	ts.runEcho(acmeKey, sid, "still here") // and it still runs turns

	r = ts.do(http.MethodDelete, "/api/sessions/"+sid, acmeKey, "")
	assert.Equal(t, http.StatusNoContent, r.status, "the delete tried again: %s", r.body)
	r = ts.do(http.MethodGet, "/api/sessions/"+sid, acmeKey, "")
	assert.Equal(t, http.StatusNotFound, r.status)
}

// corruptSessionRecords overwrites every session record file under dir
// with bytes no store decodes and returns how many it found.
func corruptSessionRecords(t testing.TB, dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), "session-") {
			return nil
		}
		require.NoError(t, os.WriteFile(path, []byte("\x00not a record"), 0o600))
		n++
		return nil
	})
	return n
}
