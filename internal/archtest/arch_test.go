package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// pkg is what the test reads of one package `go list -json` describes.
type pkg struct {
	ImportPath string
	Dir        string
	// GoFiles, CgoFiles and IgnoredGoFiles (those of other platforms) are
	// the package's non-test files.
	GoFiles, CgoFiles, IgnoredGoFiles []string
	Imports                           []string // direct imports
	Deps                              []string // every dependency, direct or not
	Module                            *struct {
		Path string
		Main bool
	}
}

// graph is the module's packages and everything they depend on.
type graph struct {
	module string          // the module path
	pkgs   map[string]*pkg // by import path: the module's and their dependencies
	own    []string        // the module's packages, sorted
}

// Every rule of the table holds for every package of the module, and
// every pattern of the table names at least one package.
func TestDependenciesPointDown(t *testing.T) {
	g := load(t)
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			g.checkPatterns(t, r)
			if vs := g.violations(r); len(vs) > 0 {
				t.Errorf("%s\n\t%s", r.why, strings.Join(vs, "\n\t"))
			}
		})
	}
}

// load runs `go list -deps -json ./...` at the module's root.
func load(t *testing.T) *graph {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	gomod, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(gomod)) == 0 {
		t.Fatalf("go env GOMOD: %v (%q)", err, gomod)
	}
	cmd := exec.Command(goTool, "list", "-deps", "-json", "./...")
	cmd.Dir = filepath.Dir(string(bytes.TrimSpace(gomod)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -json ./...: %v\n%s", err, stderr.Bytes())
	}
	g := &graph{pkgs: map[string]*pkg{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		g.pkgs[p.ImportPath] = p
		if p.Module != nil && p.Module.Main {
			g.module = p.Module.Path
			g.own = append(g.own, p.ImportPath)
		}
	}
	if g.module == "" {
		t.Fatal("go list listed no package of the main module")
	}
	slices.Sort(g.own)
	return g
}

// match reports whether the import path p matches pattern.
func (g *graph) match(pattern, p string) bool {
	if std, ok := strings.CutPrefix(pattern, "std:"); ok { // a standard library package
		return p == std
	}
	full := pattern
	if first, _, _ := strings.Cut(pattern, "/"); first == "..." || !strings.Contains(first, ".") {
		full = g.module + "/" + pattern
	}
	if base, ok := strings.CutSuffix(full, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == full
}

func (g *graph) matchAny(patterns []string, p string) bool {
	return slices.ContainsFunc(patterns, func(pat string) bool { return g.match(pat, p) })
}

// checkPatterns fails for a pattern of r that names no package: the
// module's own for pkgs and except, any listed package for forbid.
func (g *graph) checkPatterns(t *testing.T, r rule) {
	t.Helper()
	own := func(pat string) bool {
		return slices.ContainsFunc(g.own, func(p string) bool { return g.match(pat, p) })
	}
	for _, pat := range slices.Concat(r.pkgs, r.except) {
		if !own(pat) {
			t.Errorf("pattern %q of rule %s names no package of the module", pat, r.name)
		}
	}
	for _, pat := range r.forbid {
		found := false
		for p := range g.pkgs {
			if g.match(pat, p) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("forbidden pattern %q of rule %s names no package the build lists", pat, r.name)
		}
	}
}

// violations lists, for every package r is about and every pattern of
// forbid, the nearest package of that pattern it reaches (imports, when r
// is direct), with the chain of imports that reaches it.
func (g *graph) violations(r rule) []string {
	var out []string
	for _, p := range g.own {
		if !g.matchAny(r.pkgs, p) || g.matchAny(r.except, p) {
			continue
		}
		if r.direct {
			for _, d := range g.pkgs[p].Imports {
				if g.matchAny(r.forbid, d) {
					out = append(out, g.short(p)+" imports "+g.short(d))
				}
			}
			continue
		}
		for _, pat := range r.forbid {
			if chain := g.nearest(p, pat); chain != nil {
				out = append(out, g.short(p)+" reaches "+chain[len(chain)-1]+": "+strings.Join(chain, " -> "))
			}
		}
	}
	return out
}

// nearest returns the shortest chain of imports from the package from to a
// package that matches pattern, or nil when from reaches none.
func (g *graph) nearest(from, pattern string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != from && g.match(pattern, p) {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append(chain, g.short(p))
			}
			slices.Reverse(chain)
			return chain
		}
		if g.pkgs[p] == nil {
			continue
		}
		for _, next := range g.pkgs[p].Imports {
			if _, seen := prev[next]; !seen {
				prev[next] = p
				queue = append(queue, next)
			}
		}
	}
	return nil
}

// short is p relative to the module, or p itself outside it.
func (g *graph) short(p string) string {
	if rel, ok := strings.CutPrefix(p, g.module+"/"); ok {
		return rel
	}
	return p
}
