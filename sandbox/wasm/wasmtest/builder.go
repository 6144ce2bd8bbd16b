package wasmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Builder builds guests into its directory, each package once.
type Builder struct {
	dir   string
	root  string
	mu    sync.Mutex
	built map[string]*build
}

type build struct {
	once sync.Once
	bin  []byte
	err  error
}

// NewBuilder returns a Builder writing into dir, for the module whose
// go.mod is found from the working directory up.
func NewBuilder(dir string) (*Builder, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	return &Builder{dir: dir, root: root, built: map[string]*build{}}, nil
}

// Main runs m with *b set to a Builder over a temporary directory that it
// removes afterwards, and returns the exit code.
func Main(m *testing.M, b **Builder) int {
	dir, err := os.MkdirTemp("", "wasm-guests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *b, err = NewBuilder(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// Build returns the module of the Go package at pkg (a directory relative
// to the module root), building it on first use; it fails t when the
// build fails.
func (b *Builder) Build(t testing.TB, pkg string) []byte {
	t.Helper()
	bin, err := b.BuildErr(pkg)
	if err != nil {
		t.Fatalf("build guest %s: %v", pkg, err)
	}
	return bin
}

// BuildErr is Build returning the error.
func (b *Builder) BuildErr(pkg string) ([]byte, error) {
	b.mu.Lock()
	bd, ok := b.built[pkg]
	if !ok {
		bd = &build{}
		b.built[pkg] = bd
	}
	b.mu.Unlock()
	bd.once.Do(func() { bd.bin, bd.err = b.compile(pkg) })
	return bd.bin, bd.err
}

func (b *Builder) compile(pkg string) ([]byte, error) {
	out := filepath.Join(b.dir, filepath.Base(pkg)+fmt.Sprintf("-%d.wasm", len(b.built)))
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, "./"+filepath.ToSlash(pkg))
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, msg)
	}
	return os.ReadFile(out)
}

// moduleRoot finds the directory of go.mod from the working directory up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
