package reftest

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ReferenceDir is where the reference lives, relative to the module root.
const ReferenceDir = "docs/reference"

var (
	// headingRE matches a numbered heading: "# 2. Sessions", "## 2.1 Key".
	headingRE = regexp.MustCompile(`^#{1,6}\s+(` + idPattern + `)\.?(?:\s|$)`)
	// itemRE matches a list item that starts with its number in bold:
	// "- **2.1.3** Open checks", "  - **2.1.3.1** a nil ctx".
	itemRE = regexp.MustCompile(`^\s*(?:[-*+]|\d+[.)])\s+\*\*(` + idPattern + `)\*\*`)
)

// Item is one numbered section or item of the reference.
type Item struct {
	ID   string
	File string // slash-separated, relative to the module root
	Line int
}

// ParseReference returns the numbered headings and items of one reference
// file, in order. Fenced code blocks are skipped.
func ParseReference(name string, md []byte) []Item {
	var out []Item
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			out = append(out, Item{ID: m[1], File: name, Line: n})
		} else if m := itemRE.FindStringSubmatch(line); m != nil {
			out = append(out, Item{ID: m[1], File: name, Line: n})
		}
	}
	return out
}

// Report is what Check found.
type Report struct {
	Files      int             // Go files read
	References int             // citations read; one may name several ids
	Citations  []Citation      // every cited id, in file and line order
	Items      map[string]Item // the reference's sections and items by id
	Unresolved []Problem       // citations of ids the reference lacks, and citations that cannot be read
	Reference  []Problem       // problems of the reference itself
}

// Check reads the reference under root/docs/reference and the comments of
// every Go file under root (directories whose name starts with "." are
// skipped), and reports what does not resolve.
func Check(root string) (*Report, error) {
	r := &Report{Items: map[string]Item{}}
	if err := r.readReference(root); err != nil {
		return nil, err
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		r.Files++
		cites, problems := FileCitations(filepath.ToSlash(rel), src)
		r.Unresolved = append(r.Unresolved, problems...)
		refs := map[int]bool{}
		for _, c := range cites {
			refs[c.Ref] = true
			r.Citations = append(r.Citations, c)
			if _, ok := r.Items[c.ID]; !ok {
				r.Unresolved = append(r.Unresolved, Problem{c.File, c.Line,
					fmt.Sprintf("REF %s (in %q) is not a numbered item or section of %s", c.ID, c.Written, ReferenceDir)})
			}
		}
		r.References += len(refs) + len(problems)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sortProblems(r.Unresolved)
	return r, nil
}

// readReference parses every Markdown file of the reference and checks its
// numbering: no id twice, every item under an existing parent, and every id
// of a file under that file's section.
func (r *Report) readReference(root string) error {
	dir := filepath.Join(root, filepath.FromSlash(ReferenceDir))
	files, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no reference files in %s", ReferenceDir)
	}
	sort.Strings(files)
	var all []Item
	for _, f := range files {
		md, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		name := path.Join(ReferenceDir, filepath.Base(f))
		items := ParseReference(name, md)
		section := ""
		for _, it := range items {
			if !strings.Contains(it.ID, ".") {
				if section != "" {
					r.Reference = append(r.Reference, Problem{it.File, it.Line,
						fmt.Sprintf("section %s in the file of section %s", it.ID, section)})
				}
				section = it.ID
				continue
			}
			if first, _, _ := strings.Cut(it.ID, "."); first != section {
				r.Reference = append(r.Reference, Problem{it.File, it.Line,
					fmt.Sprintf("item %s outside its section (this file is section %q)", it.ID, section)})
			}
		}
		all = append(all, items...)
	}
	for _, it := range all {
		if prev, dup := r.Items[it.ID]; dup {
			r.Reference = append(r.Reference, Problem{it.File, it.Line,
				fmt.Sprintf("%s is numbered twice (first at %s:%d)", it.ID, prev.File, prev.Line)})
			continue
		}
		r.Items[it.ID] = it
	}
	for _, it := range all {
		i := strings.LastIndex(it.ID, ".")
		if i < 0 {
			continue
		}
		if _, ok := r.Items[it.ID[:i]]; !ok {
			r.Reference = append(r.Reference, Problem{it.File, it.Line,
				fmt.Sprintf("%s has no parent %s", it.ID, it.ID[:i])})
		}
	}
	sortProblems(r.Reference)
	return nil
}

func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].File != ps[j].File {
			return ps[i].File < ps[j].File
		}
		return ps[i].Line < ps[j].Line
	})
}

// FindModuleRoot returns the nearest directory at or above dir that holds a
// go.mod file.
func FindModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
		dir = parent
	}
}
