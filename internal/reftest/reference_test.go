package reftest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot returns the root of the module the test runs in.
func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := FindModuleRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Every citation in the module's Go files names a numbered item or section
// of docs/reference, and the reference's numbering is sound.
func TestCitationsResolve(t *testing.T) {
	r, err := Check(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Reference {
		t.Errorf("%s", p)
	}
	for _, p := range r.Unresolved {
		t.Errorf("%s", p)
	}
	if len(r.Citations) == 0 {
		t.Fatal("no citation found: the scan reads nothing")
	}
	t.Logf("%d Go files, %d citations naming %d ids, %d numbered items and sections in %s",
		r.Files, r.References, len(r.Citations), len(r.Items), ReferenceDir)
}

// Every file the reference's index lists exists, and every reference file
// is listed.
func TestIndexListsEveryFile(t *testing.T) {
	dir := filepath.Join(moduleRoot(t), filepath.FromSlash(ReferenceDir))
	index, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name != "README.md" && !strings.Contains(string(index), "("+name+")") {
			t.Errorf("%s/README.md does not link %s", ReferenceDir, name)
		}
	}
}

// writeTree writes files (slash paths relative to the returned root).
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const smallReference = "# 1. Runtime\n\n## 1.1 Keys\n\n- **1.1.1** one\n- **1.1.2** two\n  - **1.1.2.1** part\n\n```\n- **1.1.9** in a code block, not an item\n```\n"

// The check fails, naming file and line, for a citation of an id the
// reference lacks, for a wrapped one, for one inside a range, and for the
// keyword without an id; it ignores string literals and hidden directories.
func TestCheckReportsUnresolved(t *testing.T) {
	root := writeTree(t, map[string]string{
		"go.mod":                        "module example.com/m\n",
		"docs/reference/runtime.md":     smallReference,
		"docs/reference/README.md":      "# Index\n\n- [runtime.md](runtime.md)\n",
		".hidden/skip.go":               "package skip\n\n// REF 7.7\n",
		"a/a.go":                        "package a\n\n// REF 1.1.1, 1.1.2.1: fine.\n// REF 1.1.3: no such item.\nvar s = \"REF 8.8 in a string is not a citation\"\n\n// wraps (REF\n// 1.9)\n",
		"a/b_test.go":                   "package a\n\n/* REF 1.1.1–1.1.3 */\n\n// REF and then nothing\n",
		"docs/reference/notcounted.txt": "- **5.5** not a .md file",
	})
	r, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.Unresolved {
		got = append(got, p.File+":"+strconv.Itoa(p.Line)+" "+firstWords(p.Msg))
	}
	want := []string{
		"a/a.go:4 REF 1.1.3",
		"a/a.go:7 REF 1.9",
		"a/b_test.go:3 REF 1.1.3",
		"a/b_test.go:5 cannot read",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("unresolved:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(r.Reference) != 0 {
		t.Errorf("reference problems: %v", r.Reference)
	}
	if r.Files != 2 {
		t.Errorf("read %d Go files, want 2", r.Files)
	}
	if _, ok := r.Items["1.1.9"]; ok {
		t.Error("an item inside a code block was counted")
	}
}

// The check fails for an id numbered twice, for an item whose parent is
// missing and for an item outside its file's section.
func TestCheckReportsBadNumbering(t *testing.T) {
	root := writeTree(t, map[string]string{
		"go.mod": "module example.com/m\n",
		"docs/reference/runtime.md": "# 1. Runtime\n\n## 1.1 Keys\n\n- **1.1.1** one\n- **1.1.1** again\n" +
			"- **1.2.1** no parent\n- **2.1** elsewhere\n",
	})
	r, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.Reference {
		got = append(got, strconv.Itoa(p.Line)+" "+p.Msg)
	}
	want := []string{
		"6 1.1.1 is numbered twice (first at docs/reference/runtime.md:5)",
		"7 1.2.1 has no parent 1.2",
		"8 item 2.1 outside its section (this file is section \"1\")",
		"8 2.1 has no parent 2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reference problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// firstWords returns the first two words of msg.
func firstWords(msg string) string {
	f := strings.Fields(msg)
	if len(f) > 2 {
		f = f[:2]
	}
	return strings.Join(f, " ")
}
