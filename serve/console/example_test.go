package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/corral-rt/corral/serve/console"
)

// Mount the console at "/" and its files under AssetPrefix; the API's
// routes live beside it on the same mux.
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", console.Handler())
	mux.Handle("GET "+console.AssetPrefix, console.Handler())

	for _, path := range []string{"/", "/console/app.js", "/console/missing.js"} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, w.Code, w.Header().Get("Content-Type"))
	}
	// Output:
	// / 200 text/html; charset=utf-8
	// /console/app.js 200 text/javascript; charset=utf-8
	// /console/missing.js 404 text/plain; charset=utf-8
}
