package serve

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// REF 11.3.6
// Every route routes() registers with a method is an operation of
// /openapi.json, and every operation of the document is such a route:
// the document and the handlers cannot drift apart. The console's files
// and /metrics are not API operations.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "routes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		v, err := strconv.Unquote(lit.Value)
		if err != nil {
			return true
		}
		method, path, ok := strings.Cut(v, " ")
		if !ok || !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, method) || !strings.HasPrefix(path, "/") {
			return true
		}
		if path == "/{$}" || path == "/metrics" || strings.HasPrefix(path, "/console") {
			return true
		}
		routes = append(routes, method+" "+path)
		return true
	})
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for path, methods := range doc.Paths {
		for m := range methods {
			ops = append(ops, strings.ToUpper(m)+" "+path)
		}
	}
	slices.Sort(routes)
	slices.Sort(ops)
	if len(routes) < 15 {
		t.Fatalf("found %d routes in routes.go, want the API's: %v", len(routes), routes)
	}
	for _, r := range routes {
		if !slices.Contains(ops, r) {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for _, o := range ops {
		if !slices.Contains(routes, o) {
			t.Errorf("openapi.json describes %s, which no route serves", o)
		}
	}
}
