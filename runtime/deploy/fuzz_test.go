package deploy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/resource"
)

// FuzzParse checks that Parse never panics, that every error is a
// *deploy.Error, and that an accepted document validates again and hashes
// the same every time.
func FuzzParse(f *testing.F) {
	f.Add([]byte(yamlDoc))
	f.Add([]byte(jsonDoc))
	f.Add([]byte(baseLayer))
	if files, err := filepath.Glob(filepath.Join(testdataDir, "*.yaml")); err == nil {
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Add([]byte("version: v1\nresources: {a: {kind: k, settings: {x: [1, {y: ~}]}}}\n"))
	f.Add([]byte("{\"version\": \"v1\", \"agents\": {\"a\": {\"card\": {\"name\": \"A\"}}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := deploy.ParseWithConfig(data, deploy.ParseConfig{Filename: "fuzz"})
		if err != nil {
			var de *deploy.Error
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *deploy.Error: %v", err)
			}
			return
		}
		if err := doc.Validate(); err != nil {
			t.Fatalf("accepted document does not validate again: %v", err)
		}
		if doc.Hash() != doc.Hash() {
			t.Fatal("hash is not stable")
		}
	})
}

// FuzzLoaderExpand checks that Expand never panics and leaves text without
// expansions as it is.
func FuzzLoaderExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "${env:HOME}", "${base:a/b}", "~/x", "~", "$${x}", "${", "${}", "${home:}", "$$", "a$b${env:X}c"} {
		f.Add(s)
	}
	l := deploy.NewLoader(deploy.LoaderConfig{
		BaseDir:   "/base",
		Home:      "/home/user",
		LookupEnv: func(k string) (string, bool) { return "<" + k + ">", k != "" && k[0] != 'U' },
	})
	f.Fuzz(func(t *testing.T, s string) {
		out, err := l.Expand(s)
		if err != nil {
			return
		}
		if !strings.Contains(s, "${") && !strings.HasPrefix(s, "~") && out != s {
			t.Fatalf("Expand(%q) = %q, want the input unchanged", s, out)
		}
	})
}

// FuzzSourceRef checks that a settings file reference never yields content
// from outside the base directory, whatever the path, however the links in
// it point.
func FuzzSourceRef(f *testing.F) {
	base := sandboxDir(f)
	secret, err := os.ReadFile(filepath.Join(base, "..", "secret.txt"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"a.yaml", "../secret.txt", "out", "in", "subout/secret.txt", "subout/base/a.yaml",
		"sub/../../secret.txt", "/etc/passwd", "sub/./b.json", "", ".", "..", "sub/dir"} {
		f.Add(s)
	}
	l := deploy.NewLoader(deploy.LoaderConfig{BaseDir: base})
	f.Fuzz(func(t *testing.T, name string) {
		raw := []byte(`{"file":` + quoteJSON(name) + `}`)
		src, ok := resource.SourceOf(raw)
		if !ok {
			return
		}
		data, err := l.Load(context.Background(), src)
		if err == nil && strings.Contains(string(data), string(secret)) {
			t.Fatalf("reference %q read %q from outside the base directory", name, data)
		}
	})
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// FuzzLoadLayers checks that merging any overlay over a valid base never
// panics, that every error is a *deploy.Error, and that an accepted
// document validates again;
// the seeds include overlays that replace a component (REF 3.4.6.1).
func FuzzLoadLayers(f *testing.F) {
	for _, s := range []string{
		"resources:\n  store: {kind: test.Store, impl: other, settings: {url: x}}\n",
		"resources:\n  store: {impl: other}\n",
		"resources:\n  store: {settings: {note: top}}\n",
		"agents:\n  qa:\n    engine: {kind: agent.Engine, impl: other}\n",
		"resources: {bus: null}\n",
		"version: v2\n",
		"- a\n",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, over []byte) {
		doc, _, err := deploy.LoadLayers([]deploy.Layer{
			{Name: "base", Data: []byte(baseLayer), File: "base.yaml"},
			{Name: "top", Priority: 1, Data: over, File: "top.yaml"},
		}, deploy.ParseConfig{})
		if err != nil {
			var de *deploy.Error
			if !errors.As(err, &de) {
				t.Fatalf("error is not a *deploy.Error: %v", err)
			}
			return
		}
		if err := doc.Validate(); err != nil {
			t.Fatalf("accepted document does not validate again: %v", err)
		}
	})
}
