package deploy_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/deploy")

// testdataDir holds the deployment documents of these tests.
var testdataDir = filepath.Join("..", "..", "testdata", "deploy")

// goldenCap is the loader's size cap in the golden tests, small enough
// that testdata/deploy/files/big.yaml exceeds it.
const goldenCap = 4096

// goldenOptions are the options every golden document is deployed with:
// the fake registry, a loader rooted at testdata/deploy with a fixed
// environment and home, and the external dependency db.
func goldenOptions(j *journal) deploy.Options {
	return deploy.Options{
		Registry: testRegistry(j),
		Loader: deploy.NewLoader(deploy.LoaderConfig{
			BaseDir: testdataDir, MaxBytes: goldenCap, LookupEnv: fixedEnv, Home: "/home/test",
		}),
		External: map[string]deploy.External{"db": {Contract: "db.Pool", Value: &thing{name: "db", j: j}}},
	}
}

// deployTestdata parses and deploys a file of testdata/deploy.
func deployTestdata(t *testing.T, name string) (*deploy.Result, *journal, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdataDir, name))
	require.NoError(t, err)
	doc, err := deploy.ParseWithConfig(data, deploy.ParseConfig{Filename: name, BaseDir: testdataDir})
	if err != nil {
		return nil, nil, err
	}
	j := &journal{}
	res, err := deploy.Deploy(context.Background(), doc, goldenOptions(j))
	return res, j, err
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(testdataDir, name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file; run go test -update")
	assert.Equal(t, string(want), got)
}

// TestBadDocumentsGolden deploys every bad-* document and compares the
// error's kind and text with its .golden file.
func TestBadDocumentsGolden(t *testing.T) {
	// REF 3.5
	t.Parallel()
	var files []string
	for _, pattern := range []string{"bad-*.yaml", "bad-*.json"} {
		m, err := filepath.Glob(filepath.Join(testdataDir, pattern))
		require.NoError(t, err)
		files = append(files, m...)
	}
	require.GreaterOrEqual(t, len(files), 15)
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, _, err := deployTestdata(t, name)
			if res != nil {
				require.NoError(t, res.Close())
			}
			require.Error(t, err)
			var de *deploy.Error
			require.ErrorAs(t, err, &de, "every document error is a *deploy.Error")
			assert.Equal(t, name, de.Pos.File)
			assert.Positive(t, de.Pos.Line)
			got := fmt.Sprintf("%s\n%s\n", fault.KindOf(err), err)
			checkGolden(t, strings.TrimSuffix(name, filepath.Ext(name))+".golden", got)
		})
	}
}

// TestFullDocumentGolden deploys the document that uses every part of the
// format and compares the assembled plan with full.golden: build order,
// each value's resolved settings and deps, the agents and the close order.
func TestFullDocumentGolden(t *testing.T) {
	// REF 3.4.1
	t.Parallel()
	res, j, err := deployTestdata(t, "full.yaml")
	require.NoError(t, err)
	var b strings.Builder
	fmt.Fprintf(&b, "order: %s\n", strings.Join(res.Order(), " "))
	for _, name := range res.Order() {
		v, ok := res.Value(name)
		require.True(t, ok)
		th := thingOf(v)
		fmt.Fprintf(&b, "resource %s: %s settings=%s deps=%s\n", name, th.kind, th.settings, depNames(th.deps))
	}
	for _, id := range res.AgentNames() {
		a, ok := res.Agent(id)
		require.True(t, ok)
		eng := a.Engine.(*engine)
		fmt.Fprintf(&b, "agent %s: engine settings=%s deps=%s hooks=%d/%d/%d/%d closers=%d\n", id, eng.settings,
			depNames(eng.deps), len(a.Preparers), len(a.Observers), len(a.Referees), len(a.Committers), len(a.Closers))
	}
	require.NoError(t, res.Close())
	fmt.Fprintf(&b, "journal:\n  %s\n", strings.Join(j.list(), "\n  "))
	checkGolden(t, "full.golden", b.String())
}

func thingOf(v any) *thing {
	switch t := v.(type) {
	case *thing:
		return t
	case *catalog:
		return t.thing
	case *wirer:
		return t.thing
	case *binder:
		return t.thing
	case *engine:
		return t.thing
	}
	return nil
}

// depNames describes resolved deps: the key and the value's name.
func depNames(deps map[string]any) string {
	var parts []string
	for _, k := range sortedKeys(deps) {
		switch v := deps[k].(type) {
		case string:
			parts = append(parts, k+"="+v)
		default:
			if th := thingOf(v); th != nil {
				parts = append(parts, k+"="+th.name)
			} else {
				parts = append(parts, fmt.Sprintf("%s=%T", k, v))
			}
		}
	}
	return "{" + strings.Join(parts, " ") + "}"
}
