package console

import (
	"bytes"
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed static
var static embed.FS

// AssetPrefix is the path under which the console's files are served;
// the page itself is served at "/".
const AssetPrefix = "/console/"

// ContentSecurityPolicy is the policy of every console response: scripts,
// styles, images and API calls from the console's origin only, nothing
// inline, no framing, no forms posted anywhere, and Trusted Types
// required for markup sinks (so innerHTML cannot be assigned a string).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; " +
	"require-trusted-types-for 'script'; trusted-types 'none'"

// file is one embedded file, ready to serve.
type file struct {
	data  []byte
	ctype string
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// files maps a request path ("/", "/console/app.js") to its file.
var files = func() map[string]file {
	out := map[string]file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			ctype = "application/octet-stream"
		}
		name := strings.TrimPrefix(p, "static/")
		out[AssetPrefix+name] = file{data: data, ctype: ctype}
		if name == "index.html" {
			out["/"] = file{data: data, ctype: ctype}
		}
		return nil
	})
	if err != nil {
		panic("console: reading the embedded files: " + err.Error()) // a build defect, caught by every test
	}
	return out
}()

// Handler serves the console: the page at "/" and its files under
// AssetPrefix, for GET and HEAD, with the Content-Security-Policy and
// no-sniff, no-referrer and no-framing headers. Any other path is 404
// and any other method 405.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", f.ctype)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.data))
	})
}
