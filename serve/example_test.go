package serve_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-rt/corral/builtin"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/serve"
)

// Serve a deployment to the tenants of a keys file and ask it for a chat
// completion, as any OpenAI client would.
func Example() {
	dir, _ := os.MkdirTemp("", "serve-example-")
	defer os.RemoveAll(dir)
	for _, name := range []string{"deploy.yaml", "keys.yaml"} {
		data, _ := os.ReadFile(filepath.Join("testdata", name))
		_ = os.WriteFile(filepath.Join(dir, name), data, 0o600)
	}
	doc, err := deploy.ParseFile(filepath.Join(dir, "deploy.yaml"))
	if err != nil {
		panic(err)
	}
	app, err := builtin.NewBuilder().Build(context.Background(), doc)
	if err != nil {
		panic(err)
	}
	defer app.Close()
	keys, err := serve.LoadKeys(filepath.Join(dir, "keys.yaml"))
	if err != nil {
		panic(err)
	}
	srv, err := serve.New(app, keys, serve.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"echo","messages":[{"role":"user","content":"hello"}]}`))
	req.Header.Set("Authorization", "Bearer acme-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, strings.Contains(string(body), `"content":"echo: hello (1 messages)"`))
	// Output: 200 OK true
}
