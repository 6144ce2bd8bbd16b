package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// baseLoader expands ${base} to a fixed directory, as a document's loader
// does.
type baseLoader struct{ base string }

func (l baseLoader) Load(context.Context, resource.Source) ([]byte, error) {
	return nil, errors.New("not used")
}

func (l baseLoader) Expand(s string) (string, error) {
	if strings.Contains(s, "${nope}") {
		return "", fault.New(fault.Validation, "expand", "%q: unknown variable", s)
	}
	return strings.ReplaceAll(s, "${base}", l.base), nil
}

func TestFactorySpec(t *testing.T) {
	t.Parallel()
	spec := workspace.Factory().Spec()
	assert.Equal(t, resource.Spec{Kind: "workspace.Workspace", Impl: "local"}, spec)
	reg := resource.NewRegistry()
	require.NoError(t, reg.Register(workspace.Factory()))
}

func TestFactoryBuildsLocal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := t.TempDir()
	in := resource.Input{
		Name:     "files",
		Settings: json.RawMessage(`{"root": "${base}/data/nested", "max_file_bytes": 4}`),
		Loader:   baseLoader{base: base},
	}
	v, err := workspace.Factory().New(ctx, in)
	require.NoError(t, err)
	ws, ok := v.(*workspace.Local)
	require.True(t, ok, "%T", v)
	assert.Equal(t, filepath.Join(base, "data", "nested"), ws.Root(), "the root is expanded and created")
	assert.ErrorIs(t, ws.Write(ctx, "f", []byte("12345")), fault.BudgetExceeded)

	closer, ok := v.(io.Closer)
	require.True(t, ok)
	require.NoError(t, closer.Close())
	require.NoError(t, closer.Close(), "Close is idempotent")
}

func TestFactorySettingsErrors(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	cases := []struct {
		name     string
		settings string
		kind     *fault.Kind
		mention  string
	}{
		{"unknown key", `{"root": "x", "rooot": "y"}`, fault.Validation, "rooot"},
		{"missing root", `{}`, fault.Validation, "root is required"},
		{"empty settings", ``, fault.Validation, "root is required"},
		{"wrong type", `{"root": 3}`, fault.Validation, "root"},
		{"negative cap", `{"root": "${base}/n", "max_file_bytes": -1}`, fault.Validation, "max_file_bytes"},
		{"bad expansion", `{"root": "${nope}/x"}`, fault.Validation, "${nope}"},
		{"missing without create", `{"root": "${base}/missing", "create": false}`, fault.NotFound, "missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := resource.Input{Name: "files", Settings: json.RawMessage(tc.settings), Loader: baseLoader{base: base}}
			_, err := workspace.Factory().New(context.Background(), in)
			require.ErrorIs(t, err, tc.kind)
			assert.Contains(t, err.Error(), tc.mention)
			assert.Contains(t, err.Error(), `"files"`, "the error names the resource")
		})
	}
	_, err := os.Stat(filepath.Join(base, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist, "create: false creates nothing")
}

func TestFactoryWithoutLoaderUsesRootAsWritten(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "plain")
	settings, err := json.Marshal(map[string]any{"root": root})
	require.NoError(t, err)
	v, err := workspace.Factory().New(context.Background(), resource.Input{Name: "files", Settings: settings})
	require.NoError(t, err)
	ws := v.(*workspace.Local)
	defer ws.Close()
	assert.Equal(t, root, ws.Root())
}
