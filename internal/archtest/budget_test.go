package archtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The size budgets a reader can hold in mind: a package of at most
// maxPackageFiles non-test files (about a dozen is the aim), and no
// non-test file of more than maxFileLines lines. A package past them is
// split by concept; a file past them, into the concepts it mixes.
const (
	maxPackageFiles = 16
	maxFileLines    = 500
)

// Every package of the module keeps within the size budgets.
func TestSizeBudgets(t *testing.T) {
	g := load(t)
	for _, path := range g.own {
		p := g.pkgs[path]
		var files []string
		for _, f := range append(append(append([]string(nil), p.GoFiles...), p.CgoFiles...), p.IgnoredGoFiles...) {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
		if len(files) > maxPackageFiles {
			t.Errorf("%s: %d non-test files, more than %d: split it by concept", path, len(files), maxPackageFiles)
		}
		for _, f := range files {
			data, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if n := bytes.Count(data, []byte("\n")); n > maxFileLines {
				t.Errorf("%s/%s: %d lines, more than %d", path, f, n, maxFileLines)
			}
		}
	}
}
