package doctest_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A snippet is one ```go block of a Markdown file.
type snippet struct {
	file     string // relative to the module's root, slash-separated
	line     int    // the first line of the code
	code     string
	preamble string // the hidden preamble's Go code; "" when none
	preLine  int    // the first line of the preamble
	// docPreamble is the preamble every snippet of the file shares, and
	// docLine its first line.
	docPreamble string
	docLine     int
}

// std names the standard library packages a snippet may use by their
// package name; the module's own packages are added from `go list`.
var std = map[string]string{
	"bytes": "bytes", "context": "context", "errors": "errors", "fmt": "fmt", "io": "io", "log": "log",
	"os": "os", "strings": "strings", "time": "time", "json": "encoding/json", "http": "net/http",
	"slices": "slices", "maps": "maps", "sync": "sync", "filepath": "path/filepath", "fs": "io/fs",
	"slog": "log/slog", "signal": "os/signal", "strconv": "strconv", "atomic": "sync/atomic",
	"testing": "testing", "embed": "embed", "sort": "sort", "fstest": "testing/fstest", "sql": "database/sql",
	"require": "github.com/stretchr/testify/require", "assert": "github.com/stretchr/testify/assert",
}

// Every Go snippet of README.md and docs/ compiles and passes go vet.
func TestGoSnippetsCompile(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	root := moduleRoot(t, goTool)
	snippets := collect(t, root)
	if len(snippets) == 0 {
		t.Fatal("found no Go snippet in README.md and docs/")
	}
	pkgs := packageNames(t, goTool, root)
	dir := t.TempDir()
	goVersion := moduleGoVersion(t, root) // the workspace must not ask for less than the module
	write(t, filepath.Join(dir, "go.mod"), "module corral.test/snippets\n\ngo "+goVersion+"\n")
	write(t, filepath.Join(dir, "go.work"), "go "+goVersion+"\n\nuse (\n\t.\n\t"+strconv.Quote(root)+"\n)\n")
	for i, s := range snippets {
		src, err := s.source(pkgs, root)
		if err != nil {
			t.Errorf("%s:%d: %v", s.file, s.line, err)
			continue
		}
		write(t, filepath.Join(dir, fmt.Sprintf("s%03d", i), "snippet.go"), src)
	}
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}} {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK="+filepath.Join(dir, "go.work"), "GOFLAGS=-mod=readonly")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s of the documentation's snippets: %v\n%s", strings.Join(args, " "), err, relative(out, dir, root))
		}
	}
	t.Logf("%d snippets compiled", len(snippets))
}

// moduleRoot returns the directory of the module's go.mod.
func moduleRoot(t *testing.T, goTool string) string {
	t.Helper()
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Fatalf("go env GOMOD: %v (%q)", err, out)
	}
	return filepath.Dir(string(bytes.TrimSpace(out)))
}

// packageNames maps the package name of each importable package of the
// module, and of the standard packages in std, to its import path.
func packageNames(t *testing.T, goTool, root string) map[string]string {
	t.Helper()
	cmd := exec.Command(goTool, "list", "-f", "{{.Name}} {{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	names := map[string]string{}
	for k, v := range std {
		names[k] = v
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, path, _ := strings.Cut(line, " ")
		if name == "main" || strings.Contains(path, "/internal/") {
			continue
		}
		names[name] = path
	}
	return names
}

// collect reads the snippets of README.md and of every Markdown file
// under docs/.
func collect(t *testing.T, root string) []snippet {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []snippet
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parseMarkdown(f, string(data))...)
	}
	return out
}

// preambleStart opens a snippet's hidden preamble; docPreambleStart one
// that every snippet of the file shares.
const (
	preambleStart    = "<!-- snippet"
	docPreambleStart = "<!-- snippets"
)

// parseMarkdown returns the ```go blocks of a Markdown text, each with the
// preamble comment that ends on the line right before its fence.
func parseMarkdown(file, text string) []snippet {
	var out []snippet
	var cur *snippet
	var pre []string // the lines of the preamble being read, nil outside one
	preLine, preEnd := 0, -1
	preamble := ""
	docPre, docLine, inDoc := "", 0, false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur != nil && strings.HasPrefix(trimmed, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		case pre != nil && trimmed == "-->":
			if inDoc {
				docPre, inDoc = strings.Join(pre, "\n"), false
			} else {
				preamble, preEnd = strings.Join(pre, "\n"), n
			}
			pre = nil
		case pre != nil:
			pre = append(pre, line)
		case strings.HasPrefix(trimmed, docPreambleStart):
			pre, docLine, inDoc = []string{}, n+1, true
		case strings.HasPrefix(trimmed, preambleStart):
			pre, preLine = []string{}, n+1
		case trimmed == "```go":
			cur = &snippet{file: file, line: n + 1}
			if preEnd == n-1 {
				cur.preamble, cur.preLine = preamble, preLine
			}
		}
	}
	if docPre != "" {
		for i := range out {
			out[i].docPreamble, out[i].docLine = docPre, docLine
		}
	}
	return out
}

// source returns the snippet as a Go file of its own package.
func (s snippet) source(pkgs map[string]string, root string) (string, error) {
	code := elide(s.code)
	var b strings.Builder
	b.WriteString("package snippet\n\n")
	if s.docPreamble != "" {
		fmt.Fprintf(&b, "//line %s:%d\n%s\n\n", filepath.Join(root, s.file), s.docLine, s.docPreamble)
	}
	if s.preamble != "" {
		fmt.Fprintf(&b, "//line %s:%d\n%s\n\n", filepath.Join(root, s.file), s.preLine, s.preamble)
	}
	switch {
	case strings.HasPrefix(strings.TrimSpace(code), "package "):
		return "//line " + filepath.Join(root, s.file) + ":" + strconv.Itoa(s.line) + "\n" + code, nil
	case isDeclarations(b.String() + code):
		fmt.Fprintf(&b, "//line %s:%d\n%s", filepath.Join(root, s.file), s.line, code)
	default:
		body, err := useTopLevel(code)
		if err != nil {
			return "", err
		}
		b.WriteString("func _() error {\n")
		fmt.Fprintf(&b, "//line %s:%d\n%s", filepath.Join(root, s.file), s.line, body)
		if !endsInReturn(b.String() + "}\n") {
			b.WriteString("\treturn nil\n")
		}
		b.WriteString("}\n")
	}
	return addImports(b.String(), pkgs)
}

// elide blanks the lines that stand for omitted code: "..." alone.
func elide(code string) string {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		if t := strings.TrimSpace(l); t == "..." || t == "// ..." {
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// isDeclarations reports whether src parses as a file of declarations.
func isDeclarations(src string) bool {
	_, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	return err == nil
}

// useTopLevel adds "; _ = name" after each statement of the snippet's top
// level that declares variables, on the same line: a snippet shows how to
// get a value and need not use it. Variables of nested blocks must be used,
// as in any Go code.
func useTopLevel(code string) (string, error) {
	const head = "package p\nfunc _() {\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", head+code+"\n}\n", parser.SkipObjectResolution)
	if err != nil {
		return "", fmt.Errorf("the snippet is neither declarations nor statements: %v", err)
	}
	type insert struct {
		at   int
		text string
	}
	var ins []insert
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		var names []string
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
						names = append(names, id.Name)
					}
				}
			}
		case *ast.DeclStmt:
			if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, sp := range gd.Specs {
					for _, id := range sp.(*ast.ValueSpec).Names {
						if id.Name != "_" {
							names = append(names, id.Name)
						}
					}
				}
			}
		}
		if len(names) > 0 {
			ins = append(ins, insert{fset.Position(st.End()).Offset - len(head), "; _ = " + uses(names)})
		}
	}
	for i := len(ins) - 1; i >= 0; i-- {
		code = code[:ins[i].at] + ins[i].text + code[ins[i].at:]
	}
	return code, nil
}

// uses returns "a; _ = b; _ = c" for names a, b, c.
func uses(names []string) string { return strings.Join(names, "; _ = ") }

// endsInReturn reports whether the function of the generated file ends in
// a return statement (then no "return nil" follows it).
func endsInReturn(src string) bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return false
	}
	fd, ok := f.Decls[len(f.Decls)-1].(*ast.FuncDecl)
	if !ok || len(fd.Body.List) == 0 {
		return false
	}
	_, ok = fd.Body.List[len(fd.Body.List)-1].(*ast.ReturnStmt)
	return ok
}

// addImports adds an import for each package name the file uses as a
// qualifier and does not declare itself.
func addImports(src string, pkgs map[string]string) (string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, 0)
	if err != nil {
		return "", fmt.Errorf("generated file does not parse: %v", err)
	}
	var paths []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil {
			if p, ok := pkgs[id.Name]; ok && !slices.Contains(paths, p) && !declared(f, id.Name) {
				paths = append(paths, p)
			}
		}
		return true
	})
	if len(paths) == 0 {
		return src, nil
	}
	slices.Sort(paths)
	head, rest, _ := strings.Cut(src, "\n")
	var b strings.Builder
	b.WriteString(head + "\n\nimport (\n")
	for _, p := range paths {
		b.WriteString("\t" + strconv.Quote(p) + "\n")
	}
	b.WriteString(")\n" + rest)
	return b.String(), nil
}

// declared reports whether the file declares name at its top level (an
// unresolved identifier may still be one the file declares later).
func declared(f *ast.File, name string) bool {
	return f.Scope != nil && f.Scope.Lookup(name) != nil
}

// relative shortens the temporary directory and the module's root in go's
// output, so that positions read "docs/sessions.md:177:3".
func relative(out []byte, dir, root string) string {
	s := strings.ReplaceAll(string(out), dir+string(filepath.Separator), "")
	return strings.ReplaceAll(s, root+string(filepath.Separator), "")
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// moduleGoVersion returns the go directive of the module's go.mod.
func moduleGoVersion(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("go.mod has no go directive")
	return ""
}
