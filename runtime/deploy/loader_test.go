package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sandboxDir makes root/base with files and links, and a secret outside
// base:
//
//	root/secret.txt            outside the base directory
//	root/base/a.yaml           "a: 1"
//	root/base/sub/b.json       {"b": 2}
//	root/base/sub/dir/         a directory
//	root/base/out -> ../secret.txt     a link that leaves the base
//	root/base/in -> sub/b.json         a link that stays inside
//	root/base/subout -> ..             a directory link that leaves the base
func sandboxDir(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	base := filepath.Join(root, "base")
	require.NoError(t, os.MkdirAll(filepath.Join(base, "sub", "dir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "secret.txt"), []byte("secret"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "a.yaml"), []byte("a: 1\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "sub", "b.json"), []byte(`{"b": 2}`), 0o644))
	require.NoError(t, os.Symlink(filepath.Join("..", "secret.txt"), filepath.Join(base, "out")))
	require.NoError(t, os.Symlink(filepath.Join("sub", "b.json"), filepath.Join(base, "in")))
	require.NoError(t, os.Symlink("..", filepath.Join(base, "subout")))
	return base
}

func TestLoaderLoadFile(t *testing.T) {
	// REF 3.2.3
	t.Parallel()
	base := sandboxDir(t)
	l := deploy.NewLoader(deploy.LoaderConfig{BaseDir: base, MaxBytes: 8})
	cases := []struct {
		file string
		want string
		kind *fault.Kind
	}{
		{"a.yaml", "a: 1\n", nil},
		{"sub/b.json", `{"b": 2}`, nil},
		{"./sub/../a.yaml", "a: 1\n", nil},
		{"in", `{"b": 2}`, nil},
		{filepath.Join(base, "a.yaml"), "", fault.Validation},
		{"../secret.txt", "", fault.Forbidden},
		{"sub/../../secret.txt", "", fault.Forbidden},
		{"out", "", fault.Forbidden},
		{"subout/secret.txt", "", fault.Forbidden},
		{"missing.yaml", "", fault.NotFound},
		{"sub/dir", "", fault.Validation},
		{"a\x00b", "", fault.Validation},
	}
	for _, tc := range cases {
		got, err := l.Load(context.Background(), resource.Source{File: tc.file})
		if tc.kind == nil {
			require.NoError(t, err, tc.file)
			assert.Equal(t, tc.want, string(got), tc.file)
			continue
		}
		assert.ErrorIs(t, err, tc.kind, "%s: %v", tc.file, err)
		assert.NotContains(t, string(got), "secret")
	}
}

func TestLoaderSizeCap(t *testing.T) {
	// REF 3.2.3
	t.Parallel()
	base := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(base, "max"), make([]byte, deploy.DefaultMaxBytes), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(base, "over"), make([]byte, deploy.DefaultMaxBytes+1), 0o644))
	l := deploy.NewLoader(deploy.LoaderConfig{BaseDir: base})
	got, err := l.Load(context.Background(), resource.Source{File: "max"})
	require.NoError(t, err, "content of exactly 1 MiB is accepted")
	assert.Len(t, got, deploy.DefaultMaxBytes)
	_, err = l.Load(context.Background(), resource.Source{File: "over"})
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "larger than 1048576 bytes")

	embed := fstest.MapFS{"big": {Data: make([]byte, 11)}}
	l = deploy.NewLoader(deploy.LoaderConfig{Embed: embed, MaxBytes: 10})
	_, err = l.Load(context.Background(), resource.Source{Embed: "big"})
	assert.ErrorIs(t, err, fault.Validation)
}

func TestLoaderLoadEmbed(t *testing.T) {
	// REF 3.2.3
	t.Parallel()
	fsys := fstest.MapFS{"graphs/qa.yaml": {Data: []byte("entry: start\n")}}
	l := deploy.NewLoader(deploy.LoaderConfig{Embed: fsys})
	got, err := l.Load(context.Background(), resource.Source{Embed: "graphs/qa.yaml"})
	require.NoError(t, err)
	assert.Equal(t, "entry: start\n", string(got))

	for name, kind := range map[string]*fault.Kind{
		"graphs/missing.yaml": fault.NotFound,
		"../graphs/qa.yaml":   fault.Forbidden,
		"/graphs/qa.yaml":     fault.Validation,
		"graphs//qa.yaml":     fault.Validation,
	} {
		_, err := l.Load(context.Background(), resource.Source{Embed: name})
		assert.ErrorIs(t, err, kind, name)
	}
	_, err = deploy.NewLoader(deploy.LoaderConfig{}).Load(context.Background(), resource.Source{Embed: "graphs/qa.yaml"})
	assert.ErrorIs(t, err, fault.NotFound, "no embedded file system")

	_, err = l.Load(context.Background(), resource.Source{})
	assert.ErrorIs(t, err, fault.Validation)
	_, err = l.Load(context.Background(), resource.Source{File: "a", Embed: "b"})
	assert.ErrorIs(t, err, fault.Validation)
}

func TestLoaderLoadCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := deploy.NewLoader(deploy.LoaderConfig{BaseDir: t.TempDir()}).Load(ctx, resource.Source{File: "a"})
	assert.ErrorIs(t, err, fault.Aborted)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestLoaderExpand(t *testing.T) {
	// REF 3.2.4
	t.Parallel()
	base := t.TempDir()
	env := map[string]string{"USER_NAME": "ada", "EMPTY": ""}
	l := deploy.NewLoader(deploy.LoaderConfig{
		BaseDir:   base,
		Home:      "/home/ada/",
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	cases := []struct {
		in, want string
		fails    bool
	}{
		{"plain text", "plain text", false},
		{"", "", false},
		{"${env:USER_NAME}", "ada", false},
		{"hello ${env:USER_NAME}!", "hello ada!", false},
		{"[${env:EMPTY}]", "[]", false},
		{"${base}", base, false},
		{"${base:data/x.db}", filepath.Join(base, "data", "x.db"), false},
		{"~", "/home/ada", false},
		{"~/notes", "/home/ada/notes", false},
		{"~ada/notes", "~ada/notes", false},
		{"a~/b", "a~/b", false},
		{"${home}", "/home/ada", false},
		{"${home:.config/corral}", "/home/ada/.config/corral", false},
		{"cost: $5", "cost: $5", false},
		{"$${env:USER_NAME}", "${env:USER_NAME}", false},
		{"$$", "$$", false},
		{"$", "$", false},
		{"${env:NOT_SET}", "", true},
		{"${env:}", "", true},
		{"${env}", "", true},
		{"${}", "", true},
		{"${base:}", "", true},
		{"${base:/etc}", "", true},
		{"${home:/etc}", "", true},
		{"${secret:x}", "", true},
		{"${env:USER_NAME", "", true},
		{"${env:${env:USER_NAME}}", "", true},
		{"ok ${", "", true},
	}
	for _, tc := range cases {
		got, err := l.Expand(tc.in)
		if tc.fails {
			assert.ErrorIs(t, err, fault.Validation, "%q", tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestLoaderExpandDefaults(t *testing.T) {
	// REF 3.2.4
	t.Setenv("CORRAL_LOADER_TEST", "from-env")
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	l := deploy.NewLoader(deploy.LoaderConfig{})
	got, err := l.Expand("${env:CORRAL_LOADER_TEST} ${home}")
	require.NoError(t, err)
	assert.Equal(t, "from-env "+strings.TrimRight(home, "/"), got)
	wd, err := os.Getwd()
	require.NoError(t, err)
	got, err = l.Expand("${base}")
	require.NoError(t, err)
	assert.Equal(t, wd, got, "an empty base directory is the working directory")
}

func TestSettingsReferences(t *testing.T) {
	// REF 3.2.3
	t.Parallel()
	base := sandboxDir(t)
	raw := map[string]string{}
	opts := deploy.Options{Registry: rawRegistry(raw), Loader: deploy.NewLoader(deploy.LoaderConfig{
		BaseDir: base,
		Embed:   fstest.MapFS{"s.yaml": {Data: []byte("note: embedded\nitems: [x]\n")}},
	})}
	doc, err := deploy.Parse([]byte(`version: v1
resources:
  fromfile: {kind: test.Thing, settings: {file: a.yaml}}
  fromjson: {kind: test.Thing, settings: {file: sub/b.json}}
  fromembed: {kind: test.Thing, settings: {embed: s.yaml}}
  inline: {kind: test.Thing, settings: {file: a.yaml, note: not a reference}}
  nested: {kind: test.Thing, settings: {graph: {file: a.yaml}}}
  text: {kind: test.Thing, settings: "a.yaml"}
`))
	require.NoError(t, err)
	res, err := deploy.Deploy(context.Background(), doc, opts)
	require.NoError(t, err)
	defer res.Close()
	assert.JSONEq(t, `{"a":1}`, raw["fromfile"], "YAML files are converted to JSON")
	assert.JSONEq(t, `{"b":2}`, raw["fromjson"])
	assert.JSONEq(t, `{"note":"embedded","items":["x"]}`, raw["fromembed"])
	assert.JSONEq(t, `{"file":"a.yaml","note":"not a reference"}`, raw["inline"], "only an exact {file} is a reference")
	assert.JSONEq(t, `{"graph":{"file":"a.yaml"}}`, raw["nested"], "nested references are the factory's to resolve")
	assert.JSONEq(t, `"a.yaml"`, raw["text"])
}

// rawRegistry registers test.Thing/ that records each value's settings.
func rawRegistry(into map[string]string) *resource.Registry {
	reg := resource.NewRegistry()
	reg.MustRegister(resource.FactoryFunc(resource.Spec{Kind: "test.Thing"}, func(_ context.Context, in resource.Input) (any, error) {
		into[in.Name] = string(in.Settings)
		return in.Name, nil
	}))
	return reg
}

// A settings file that leaves the base directory is Forbidden wherever the
// reference is written: in a resource's settings and in an agent engine's,
// although the binding of an agent makes its other failures Validation
// errors. Leaving the base directory is a policy refusal, not a malformed
// document.
func TestSettingsEscapeIsForbidden(t *testing.T) {
	t.Parallel()
	base := sandboxDir(t)
	for _, file := range []string{"../secret.txt", "sub/../../secret.txt", "out", "subout/secret.txt"} {
		for name, text := range map[string]string{
			"resource": "version: v1\nresources:\n  t: {kind: test.Thing, settings: {file: " + file + "}}\n",
			"agent": "version: v1\nagents:\n  qa: {card: {name: QA}, engine: {kind: agent.Engine, impl: fake, " +
				"settings: {file: " + file + "}}}\n",
		} {
			doc := mustParse(t, text)
			_, err := deploy.Deploy(context.Background(), doc, deploy.Options{
				Registry: testRegistry(&journal{}),
				Loader:   deploy.NewLoader(deploy.LoaderConfig{BaseDir: base}),
			})
			require.Error(t, err, "%s %s", name, file)
			assert.ErrorIs(t, err, fault.Forbidden, "%s %s", name, file)
			assert.Equal(t, fault.Forbidden, fault.KindOf(err), "%s %s: the kind callers see", name, file)
			assert.ErrorContains(t, err, "escapes the base directory", "%s %s", name, file)
		}
	}
}
