package console_test

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/serve/console"
)

// REF 11.9.1
// The page and its files are served with their types and the strict
// policy; anything else is 404 and a write is 405.
func TestHandlerServesFiles(t *testing.T) {
	t.Parallel()
	h := console.Handler()
	for _, tc := range []struct {
		method, path string
		status       int
		ctype        string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8"},
		{"HEAD", "/", 200, "text/html; charset=utf-8"},
		{"GET", "/console/index.html", 200, "text/html; charset=utf-8"},
		{"GET", "/console/app.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/console/api.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/console/sse.js", 200, "text/javascript; charset=utf-8"},
		{"GET", "/console/console.css", 200, "text/css; charset=utf-8"},
		{"GET", "/console/icon.svg", 200, "image/svg+xml"},
		{"GET", "/console/", 404, ""},
		{"GET", "/console/nothing.js", 404, ""},
		{"GET", "/console/../console/app.js", 404, ""},
		{"GET", "/index.html", 404, ""},
		{"POST", "/", 405, ""},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		assert.Equal(t, tc.status, w.Code, "%s %s", tc.method, tc.path)
		assert.Equal(t, console.ContentSecurityPolicy, w.Header().Get("Content-Security-Policy"), "%s %s", tc.method, tc.path)
		assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))
		if tc.ctype != "" {
			assert.Equal(t, tc.ctype, w.Header().Get("Content-Type"), "%s %s", tc.method, tc.path)
		}
	}
	assert.Contains(t, console.ContentSecurityPolicy, "script-src 'self';")
	assert.NotContains(t, console.ContentSecurityPolicy, "unsafe-inline")
	assert.NotContains(t, console.ContentSecurityPolicy, "unsafe-eval")
	assert.Contains(t, console.ContentSecurityPolicy, "require-trusted-types-for 'script'")
}

// REF 11.9.3
// The files hold no inline script or style (the policy would refuse
// them) and the scripts never assign markup: no innerHTML, outerHTML,
// insertAdjacentHTML or document.write, no eval, and no key in a URL.
func TestFilesHoldNoMarkupSinks(t *testing.T) {
	t.Parallel()
	root := filepath.Join("static")
	inlineScript := regexp.MustCompile(`<script(?:[^>]*)>\s*[^<\s]`)
	scriptTag := regexp.MustCompile(`<script[^>]*>`)
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\(\s*["']on`)
	var seen int
	require.NoError(t, fs.WalkDir(os.DirFS(root), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return err
		}
		text := string(data)
		seen++
		switch filepath.Ext(p) {
		case ".html":
			assert.False(t, inlineScript.MatchString(text), "%s: an inline script", p)
			for _, tag := range scriptTag.FindAllString(text, -1) {
				assert.Contains(t, tag, `src="/console/`, "%s: a script not from the console: %s", p, tag)
			}
			assert.NotContains(t, text, "<style", "%s: an inline style sheet", p)
			assert.NotRegexp(t, `\sstyle=|\son[a-z]+=`, text, "%s: an inline style or handler attribute", p)
		case ".js":
			assert.False(t, sinks.MatchString(text), "%s: a markup sink or eval: %v", p, sinks.FindString(text))
			assert.NotContains(t, text, "localStorage", "%s: the key is kept for the tab only", p)
			assert.NotRegexp(t, `[?&]key=`, text, "%s: the key in a URL", p)
		}
		return nil
	}))
	assert.GreaterOrEqual(t, seen, 5)
	assert.True(t, strings.HasPrefix(console.AssetPrefix, "/") && strings.HasSuffix(console.AssetPrefix, "/"))
}

// REF 11.9.1
// Mounted in serve: the page and its files need no key; unknown /api and
// /v1 paths keep their JSON answers (401 without a key, 404 with one).
func TestMountedInServe(t *testing.T) {
	t.Parallel()
	_, url, _ := startConsole(t)
	get := func(path, key string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url+path, nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(body)
	}
	for _, tc := range []struct {
		path, key string
		status    int
		json      bool
	}{
		{"/", "", 200, false},
		{"/console/app.js", "", 200, false},
		{"/console/missing.js", "", 404, false},
		{"/api/nothing", "", 401, true},
		{"/api/nothing", acmeKey, 404, true},
		{"/v1/nothing", acmeKey, 404, true},
		{"/index.html", acmeKey, 404, true},
	} {
		status, h, body := get(tc.path, tc.key)
		assert.Equal(t, tc.status, status, "%s: %s", tc.path, body)
		if tc.json {
			assert.Equal(t, "application/json", h.Get("Content-Type"), tc.path)
			assert.Empty(t, h.Get("Content-Security-Policy"), tc.path)
		} else {
			assert.Equal(t, console.ContentSecurityPolicy, h.Get("Content-Security-Policy"), tc.path)
		}
	}
	_, _, page := get("/", "")
	assert.Contains(t, page, `<script type="module" src="/console/app.js"></script>`)
}
