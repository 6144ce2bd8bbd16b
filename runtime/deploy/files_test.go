//go:build unix

package deploy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// promptly runs f and fails the test if it has not returned within a few
// seconds: a call that blocks is the defect these tests look for.
func promptly[T any](t *testing.T, f func() (T, error)) (T, error) {
	t.Helper()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("the call blocked")
	}
	var zero T
	return zero, nil
}

// allocated returns the bytes the process has allocated on the heap so
// far (cumulative, so a collection does not hide what a call cost).
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// weirdDir makes a base directory with a named pipe, a directory, links
// to both, a link to /dev/zero and a regular file.
func weirdDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(base, "fifo"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(base, "dir"), 0o755))
	require.NoError(t, os.Symlink("fifo", filepath.Join(base, "to-fifo")))
	require.NoError(t, os.Symlink("dir", filepath.Join(base, "to-dir")))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(base, "to-zero")))
	require.NoError(t, os.WriteFile(filepath.Join(base, "ok.yaml"), []byte("a: 1\n"), 0o644))
	return base
}

// A reference to a named pipe, a directory, or a link to either returns
// a Validation error at once (it used to block on the pipe for ever); a
// link to /dev/zero leaves the base directory and is Forbidden. A module
// reference obeys the same rules.
func TestLoaderRefusesIrregularFiles(t *testing.T) {
	t.Parallel()
	base := weirdDir(t)
	l := deploy.NewLoader(deploy.LoaderConfig{BaseDir: base})
	for _, tc := range []struct {
		name string
		kind *fault.Kind
		msg  string
	}{
		{"fifo", fault.Validation, "a named pipe, not a regular file"},
		{"to-fifo", fault.Validation, "a named pipe, not a regular file"},
		{"dir", fault.Validation, "a directory, not a regular file"},
		{"to-dir", fault.Validation, "a directory, not a regular file"},
		{"to-zero", fault.Forbidden, "escapes"},
	} {
		for _, module := range []bool{false, true} {
			_, err := promptly(t, func() ([]byte, error) {
				return l.Load(context.Background(), resource.Source{File: tc.name, Module: module})
			})
			require.Error(t, err, tc.name)
			assert.True(t, fault.Is(err, tc.kind), "%s: %v", tc.name, err)
			assert.Contains(t, err.Error(), `"`+tc.name+`"`)
			assert.Contains(t, err.Error(), tc.msg)
		}
	}
	got, err := l.Load(context.Background(), resource.Source{File: "ok.yaml"})
	require.NoError(t, err)
	assert.Equal(t, "a: 1\n", string(got))
}

// A module has its own cap, larger than the documents' one: content over
// MaxBytes loads as a module, and not as a document.
func TestLoaderModuleCap(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(base, "guest.wasm"), make([]byte, deploy.DefaultMaxBytes+1), 0o644))
	l := deploy.NewLoader(deploy.LoaderConfig{BaseDir: base})
	_, err := l.Load(context.Background(), resource.Source{File: "guest.wasm"})
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
	got, err := l.Load(context.Background(), resource.Source{File: "guest.wasm", Module: true})
	require.NoError(t, err)
	assert.Len(t, got, deploy.DefaultMaxBytes+1)

	l = deploy.NewLoader(deploy.LoaderConfig{BaseDir: base, MaxModuleBytes: 1024})
	_, err = l.Load(context.Background(), resource.Source{File: "guest.wasm", Module: true})
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
	assert.ErrorContains(t, err, "larger than 1024 bytes")
}

// Deploying a document whose settings reference a named pipe fails with a
// document error at the reference instead of blocking the build.
func TestDeployFIFOReference(t *testing.T) {
	t.Parallel()
	base := weirdDir(t)
	doc, err := deploy.ParseWithConfig([]byte(`version: v1
resources:
  bus:
    kind: test.Bus
    impl: memory
    settings: {file: to-fifo}
`), deploy.ParseConfig{Filename: "deploy.yaml", BaseDir: base})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = promptly(t, func() (*deploy.Result, error) {
		return deploy.Deploy(ctx, doc, deploy.Options{Registry: testRegistry(&journal{})})
	})
	require.Error(t, err)
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
	assert.Contains(t, err.Error(), `deploy.yaml:6: resources.bus.settings:`)
	assert.Contains(t, err.Error(), `load file "to-fifo": a named pipe, not a regular file`)
}

// ParseFile refuses a named pipe, a link to one, a directory and
// /dev/zero at once, naming the file.
func TestParseFileRefusesIrregularFiles(t *testing.T) {
	t.Parallel()
	base := weirdDir(t)
	for _, path := range []string{
		filepath.Join(base, "fifo"), filepath.Join(base, "to-fifo"), filepath.Join(base, "dir"), "/dev/zero",
	} {
		_, err := promptly(t, func() (*deploy.Document, error) { return deploy.ParseFile(path) })
		require.Error(t, err, path)
		assert.True(t, fault.Is(err, fault.Validation), "%v", err)
		assert.True(t, strings.HasPrefix(err.Error(), path+": "), "%v", err)
		assert.Contains(t, err.Error(), "not a regular file")
	}
}

// bigDocument is a valid-looking deployment document of about n bytes:
// one resource with a long list of settings.
func bigDocument(n int) []byte {
	var b strings.Builder
	b.WriteString("version: v1\nresources:\n  bus:\n    kind: test.Bus\n    impl: memory\n    settings:\n      items:\n")
	for b.Len() < n {
		b.WriteString("        - {name: an-item-with-a-longish-name, value: 12345}\n")
	}
	return []byte(b.String())
}

// An 11 MB document is refused before it is decoded, by ParseFile (which
// reads no more than the cap) and by Parse: the error says so and the
// call allocates a small fraction of the document (decoding it cost
// hundreds of megabytes).
func TestOversizedDocument(t *testing.T) {
	// Not parallel: the test measures the heap the call allocates.
	data := bigDocument(11 << 20)
	path := filepath.Join(t.TempDir(), "deploy.yaml")
	require.NoError(t, os.WriteFile(path, data, 0o644))

	before := allocated()
	_, err := deploy.ParseFile(path)
	grew := allocated() - before
	require.Error(t, err)
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
	assert.Contains(t, err.Error(), path+": ")
	assert.Contains(t, err.Error(), "larger than 1048576 bytes")
	assert.Less(t, grew, uint64(1<<20), "ParseFile allocated %d bytes", grew)

	before = allocated()
	_, err = deploy.Parse(data)
	grew = allocated() - before
	require.Error(t, err)
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
	assert.Contains(t, err.Error(), "larger than 1048576 bytes")
	assert.Less(t, grew, uint64(1<<20), "Parse allocated %d bytes", grew)

	// The cap is the caller's to raise.
	_, err = deploy.ParseWithConfig(data[:2<<20], deploy.ParseConfig{MaxBytes: 1 << 20})
	assert.ErrorContains(t, err, "larger than 1048576 bytes")
	_, _, err = deploy.LoadLayers([]deploy.Layer{{Name: "base", Data: data}}, deploy.ParseConfig{})
	assert.ErrorContains(t, err, "base: the document is")
}

// billionLaughs is the classic alias bomb, each line indented by indent:
// ten levels of nine aliases each, a billion strings once expanded, and
// last a key that names the top level.
func billionLaughs(indent string) []byte {
	var b strings.Builder
	b.WriteString(indent + "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i <= 9; i++ {
		p := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "%sa%d: &a%d [%s]\n", indent, i, i, strings.Repeat(p+",", 8)+p)
	}
	b.WriteString(indent + "top: *a9\n")
	return []byte(b.String())
}

// A billion-laughs document is refused promptly and cheaply: the parser
// keeps aliases as nodes (it never expands them into a tree), and the
// decoder refuses the first alias it meets, in a deployment document and
// in a graph loaded as settings alike.
func TestBillionLaughs(t *testing.T) {
	// Not parallel: the test measures the heap the call allocates.
	data := append([]byte("version: v1\nresources:\n  bus:\n    kind: test.Bus\n    impl: memory\n    settings:\n"),
		billionLaughs("      ")...)
	before := allocated()
	_, err := promptly(t, func() (*deploy.Document, error) { return deploy.Parse(data) })
	grew := allocated() - before
	require.Error(t, err)
	assert.True(t, fault.Is(err, fault.Validation), "%v", err)
	assert.Contains(t, err.Error(), "aliases are not supported")
	assert.Less(t, grew, uint64(4<<20), "Parse allocated %d bytes", grew)

	before = allocated()
	_, err = promptly(t, func() ([]byte, error) { return resource.YAMLToJSON(billionLaughs("")) })
	grew = allocated() - before
	require.Error(t, err)
	assert.Contains(t, err.Error(), "aliases are not supported")
	assert.Less(t, grew, uint64(4<<20), "YAMLToJSON allocated %d bytes", grew)
}
