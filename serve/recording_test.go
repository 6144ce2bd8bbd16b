package serve_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/replay"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/serve"
)

// REF 11.7.1
// A turn run through the native API is recorded; its recording downloads
// and replays identically, holds no key, and is another tenant's 404.
func TestRecordingDownload(t *testing.T) {
	t.Parallel()
	rec := replay.NewRecorder(replay.RecorderConfig{})
	ts := newTestServer(t, serve.Options{Recordings: rec})
	sid := ts.openSession(acmeKey, "echo")
	r := ts.do(http.MethodPost, "/api/sessions/"+sid+"/turns", acmeKey,
		`{"text":"hello recorded world","metadata":{"api_key":"sk-secret-1","Authorization":"Bearer sk-secret-2","note":"kept"}}`)
	require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
	tid := r.json(t)["id"].(string)
	base := "/api/sessions/" + sid + "/turns/" + tid
	r = ts.do(http.MethodGet, base+"/wait", acmeKey, "")
	require.Equal(t, "completed", r.json(t)["status"], "%s", r.body)

	r = ts.do(http.MethodGet, base+"/recording", acmeKey, "")
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	assert.Equal(t, "application/x-ndjson", r.header.Get("Content-Type"))
	assert.NotContains(t, string(r.body), acmeKey, "the recording holds no key")
	assert.NotContains(t, string(r.body), "sk-secret", "credentials in metadata are redacted")
	assert.Contains(t, string(r.body), `"note":"kept"`)
	got, err := replay.DecodeBytes(r.body)
	require.NoError(t, err)
	require.Equal(t, tid, got.Header.RunID)
	require.NotNil(t, got.Result, "the recording has the turn's outcome")

	doc, err := deploy.ParseFile(ts.path)
	require.NoError(t, err)
	report, err := replay.Replay(context.Background(), got, replay.Config{Document: doc, NewBuilder: builtin.NewBuilder})
	require.NoError(t, err)
	assert.True(t, report.Identical, "divergence: %+v", report.Divergence)

	// Another tenant, a turn of another session, an unknown turn: 404.
	r = ts.do(http.MethodGet, base+"/recording", bravoKey, "")
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.NotContains(t, string(r.body), "hello recorded world")
	other := ts.openSession(acmeKey, "echo")
	r = ts.do(http.MethodGet, "/api/sessions/"+other+"/turns/"+tid+"/recording", acmeKey, "")
	assert.Equal(t, http.StatusNotFound, r.status)
	r = ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns/run-nope/recording", acmeKey, "")
	assert.Equal(t, http.StatusNotFound, r.status)
}

// REF 11.7.2
// Without Options.Recordings, or once the recorder forgot the turn, the
// recording is 404.
func TestRecordingNotKept(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, serve.Options{})
	sid := ts.openSession(acmeKey, "echo")
	tid := ts.startTurn(acmeKey, sid, "hi")
	ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns/"+tid+"/wait", acmeKey, "")
	r := ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns/"+tid+"/recording", acmeKey, "")
	assert.Equal(t, http.StatusNotFound, r.status, "%s", r.body)

	rec := replay.NewRecorder(replay.RecorderConfig{MaxTurns: 1})
	ts = newTestServer(t, serve.Options{Recordings: rec})
	sid = ts.openSession(acmeKey, "echo")
	var tids []string
	for i := range 2 {
		tid := ts.startTurn(acmeKey, sid, fmt.Sprint("turn ", i))
		ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns/"+tid+"/wait", acmeKey, "")
		tids = append(tids, tid)
	}
	r = ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns/"+tids[0]+"/recording", acmeKey, "")
	assert.Equal(t, http.StatusNotFound, r.status, "the first turn's recording was forgotten")
	r = ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns/"+tids[1]+"/recording", acmeKey, "")
	assert.Equal(t, http.StatusOK, r.status, "%s", r.body)
}

// REF 11.7.3
// The recorder keeps each tenant's recordings within its byte bound and
// forgets the heaviest tenant's first past a shared bound (turns or
// bytes): tenant acme's many big turns forget acme's oldest recordings,
// never bravo's.
func TestRecordingsBoundedPerTenant(t *testing.T) {
	t.Parallel()
	big := strings.Repeat(strings.Repeat("x", 1000)+" ", 30) // about 100 kB of events and board writes a turn
	for _, tc := range []struct {
		name string
		cfg  replay.RecorderConfig
	}{
		{"a tenant over its own bound", replay.RecorderConfig{MaxTurns: 4, MaxTenantBytes: 250 << 10}},
		{"the turns over the shared bound", replay.RecorderConfig{MaxTurns: 4}},
		{"the bytes over the shared bound", replay.RecorderConfig{MaxBytes: 250 << 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := replay.NewRecorder(tc.cfg)
			ts := newTestServer(t, serve.Options{Recordings: rec})
			bravo := ts.openSession(bravoKey, "mirror")
			bravoTurn := ts.runEcho(bravoKey, bravo, "small")
			require.Positive(t, rec.TenantBytes("bravo"))
			var acme, acmeTurns []string // a session a turn, so that each turn's recording is alike
			for range 8 {
				sid := ts.openSession(acmeKey, "echo")
				acme, acmeTurns = append(acme, sid), append(acmeTurns, ts.runEcho(acmeKey, sid, big))
			}
			recording := func(key, sid, tid string) int {
				return ts.do(http.MethodGet, "/api/sessions/"+sid+"/turns/"+tid+"/recording", key, "").status
			}
			assert.Equal(t, http.StatusOK, recording(bravoKey, bravo, bravoTurn), "bravo's recording is kept")
			assert.Equal(t, http.StatusOK, recording(acmeKey, acme[7], acmeTurns[7]), "acme's newest recording is kept")
			assert.Equal(t, http.StatusNotFound, recording(acmeKey, acme[0], acmeTurns[0]), "acme's oldest recording is forgotten")
			if tc.cfg.MaxTenantBytes > 0 {
				assert.LessOrEqual(t, rec.TenantBytes("acme"), tc.cfg.MaxTenantBytes)
			}
			if tc.cfg.MaxBytes > 0 {
				assert.LessOrEqual(t, rec.TenantBytes("acme")+rec.TenantBytes("bravo"), tc.cfg.MaxBytes)
			}
			if tc.cfg.MaxTurns > 0 {
				assert.LessOrEqual(t, len(rec.RunIDs()), tc.cfg.MaxTurns)
			}
		})
	}
}
