package workspace_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// escapeFixture is a workspace whose root holds symbolic links that point
// outside it, beside a directory "outside" holding a secret.
type escapeFixture struct {
	ws      *workspace.Local
	outside string
}

func newEscapeFixture(t testing.TB) escapeFixture {
	t.Helper()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.Mkdir(outside, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o600))
	ws, err := workspace.NewLocal(filepath.Join(base, "root"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.Close() })
	f := escapeFixture{ws: ws, outside: outside}
	f.resetLinks(t)
	return f
}

// resetLinks (re)creates the links: rel and abs point to the outside
// directory, dangling to a missing file outside, inner to a directory
// inside.
func (f escapeFixture) resetLinks(t testing.TB) {
	t.Helper()
	root := f.ws.Root()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o750))
	links := map[string]string{
		"rel":      filepath.Join("..", "outside"),
		"abs":      f.outside,
		"dangling": filepath.Join("..", "outside", "nope"),
		"inner":    "sub",
	}
	for name, target := range links {
		at := filepath.Join(root, name)
		_ = os.RemoveAll(at)
		if err := os.Symlink(target, at); err != nil {
			t.Skipf("symbolic links are not available here: %v", err)
		}
	}
}

// assertOutsideIntact fails when anything outside the root changed.
func (f escapeFixture) assertOutsideIntact(t testing.TB) {
	t.Helper()
	entries, err := os.ReadDir(f.outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing may be created outside the root")
	got, err := os.ReadFile(filepath.Join(f.outside, "secret"))
	require.NoError(t, err)
	require.Equal(t, "secret", string(got))
}

type pathOp struct {
	name      string
	allowRoot bool // the op accepts the root itself ("" and ".")
	run       func(ctx context.Context, ws workspace.Workspace, p string) error
}

func pathOps() []pathOp {
	return []pathOp{
		{"read", false, func(ctx context.Context, ws workspace.Workspace, p string) error {
			_, err := ws.Read(ctx, p)
			return err
		}},
		{"write", false, func(ctx context.Context, ws workspace.Workspace, p string) error {
			return ws.Write(ctx, p, []byte("x"))
		}},
		{"delete", false, func(ctx context.Context, ws workspace.Workspace, p string) error {
			return ws.Delete(ctx, p)
		}},
		{"exists", true, func(ctx context.Context, ws workspace.Workspace, p string) error {
			_, err := ws.Exists(ctx, p)
			return err
		}},
		{"list", true, func(ctx context.Context, ws workspace.Workspace, p string) error {
			_, err := ws.List(ctx, p)
			return err
		}},
		{"rename from", false, func(ctx context.Context, ws workspace.Workspace, p string) error {
			return ws.Rename(ctx, p, "renamed")
		}},
		{"rename to", false, func(ctx context.Context, ws workspace.Workspace, p string) error {
			if err := ws.Write(ctx, "src", []byte("x")); err != nil {
				return err
			}
			return ws.Rename(ctx, "src", p)
		}},
	}
}

// Every operation refuses a path that is absolute, climbs out of the root,
// or goes through a symbolic link that points outside, with an error naming
// the path; nothing outside the root changes.
func TestPathSafety(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path string
		kind *fault.Kind
		why  string
	}{
		{"/etc/passwd", fault.Forbidden, "absolute"},
		{"/", fault.Forbidden, "absolute root"},
		{"..", fault.Forbidden, "parent of the root"},
		{"../x", fault.Forbidden, "climbs out"},
		{"a/../../x", fault.Forbidden, "climbs out after going in"},
		{"a/b/../../../outside/secret", fault.Forbidden, "climbs out to a real file"},
		{`a\b`, fault.Validation, "backslash"},
		{`..\x`, fault.Validation, "backslash climb"},
		{"a\x00b", fault.Validation, "NUL byte"},
		{"rel/secret", fault.Forbidden, "relative symlink to outside"},
		{"abs/secret", fault.Forbidden, "absolute symlink"},
		{"rel/new/deeper", fault.Forbidden, "creating below a symlink to outside"},
		{"inner/../../outside/secret", fault.Forbidden, "lexical climb through an inner link"},
	}
	ctx := context.Background()
	for _, op := range pathOps() {
		t.Run(op.name, func(t *testing.T) {
			t.Parallel()
			f := newEscapeFixture(t)
			for _, tc := range cases {
				err := op.run(ctx, f.ws, tc.path)
				require.ErrorIs(t, err, tc.kind, "%s: %q", tc.why, tc.path)
				quoted := strconv.Quote(tc.path)
				assert.Contains(t, err.Error(), quoted[1:len(quoted)-1], "the error names the path")
			}
			for _, p := range []string{"", "."} {
				err := op.run(ctx, f.ws, p)
				if op.allowRoot {
					assert.NoError(t, err, "the root itself %q", p)
				} else {
					assert.ErrorIs(t, err, fault.Validation, "the root itself %q", p)
				}
			}
			f.assertOutsideIntact(t)
		})
	}
}

// A symbolic link as the last component: reading through it is refused
// when it points outside, and a write replaces the link itself, so the
// target outside is never touched.
func TestSymlinkAsLastComponent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newEscapeFixture(t)
	for _, p := range []string{"dangling", "abs", "rel"} {
		_, err := f.ws.Read(ctx, p)
		assert.ErrorIs(t, err, fault.Forbidden, p)
		_, err = f.ws.Exists(ctx, p)
		assert.ErrorIs(t, err, fault.Forbidden, p)
		_, err = f.ws.List(ctx, p)
		assert.ErrorIs(t, err, fault.Forbidden, p)
	}
	require.NoError(t, f.ws.Write(ctx, "dangling", []byte("inside")))
	got, err := f.ws.Read(ctx, "dangling")
	require.NoError(t, err)
	assert.Equal(t, "inside", string(got))
	st, err := os.Lstat(filepath.Join(f.ws.Root(), "dangling"))
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular(), "the link was replaced by a file")

	require.NoError(t, f.ws.Delete(ctx, "rel"), "deleting a link removes the link")
	f.assertOutsideIntact(t)

	require.NoError(t, f.ws.Write(ctx, "inner/through", []byte("ok")), "a link that stays inside is followed")
	got, err = os.ReadFile(filepath.Join(f.ws.Root(), "sub", "through"))
	require.NoError(t, err)
	assert.Equal(t, "ok", string(got))
}
