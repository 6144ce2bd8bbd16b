package workspace_test

import (
	"context"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
)

// FuzzWorkspacePath feeds any string to every operation as a path. Each
// either fails with a fault error or acts on a file under the root; nothing
// panics and nothing outside the root changes.
func FuzzWorkspacePath(f *testing.F) {
	for _, seed := range []string{
		"a", "a/b/c.txt", "./x", "a//b", "", ".", "..", "../x", "/etc/passwd", `a\b`, "a\x00b",
		"rel/secret", "abs/secret", "dangling", "inner/x", "inner/../../outside/secret", "sub/../../x",
		".corral-tmp-0123456789abcdef", strings.Repeat("long/", 60) + "x",
	} {
		f.Add(seed)
	}
	fx := newEscapeFixture(f)
	root := fx.ws.Root()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, p string) {
		fx.resetLinks(t)
		data := []byte("fuzz:" + p)
		err := fx.ws.Write(ctx, p, data)
		if err != nil {
			if fault.KindOf(err) == nil {
				t.Fatalf("write %q: an error without a kind: %v", p, err)
			}
		} else {
			clean := path.Clean(p)
			full := filepath.Join(root, filepath.FromSlash(clean))
			rel, rerr := filepath.Rel(root, full)
			if rerr != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				t.Fatalf("write %q succeeded outside the root: %s", p, full)
			}
			got, rerr := fx.ws.Read(ctx, p)
			if rerr != nil || string(got) != string(data) {
				t.Fatalf("read back %q: %q, %v", p, got, rerr)
			}
		}
		if _, err := fx.ws.Exists(ctx, p); err != nil && fault.KindOf(err) == nil {
			t.Fatalf("exists %q: an error without a kind: %v", p, err)
		}
		if _, err := fx.ws.List(ctx, p); err != nil && fault.KindOf(err) == nil {
			t.Fatalf("list %q: an error without a kind: %v", p, err)
		}
		if err := fx.ws.Delete(ctx, p); err != nil && fault.KindOf(err) == nil {
			t.Fatalf("delete %q: an error without a kind: %v", p, err)
		}
		fx.assertOutsideIntact(t)
	})
}
