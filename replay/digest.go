package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/corral-rt/corral/fault"
)

// maxDigestFiles bounds the files Digests follows from one document.
const maxDigestFiles = 256

// Digests returns the SHA-256 digests of the deployment document at file
// and of every file it references through a "file" key (graph documents,
// scripts, modules, settings), following references in the YAML and JSON
// files it reaches, by path relative to the document's directory, sorted.
// A reference that leaves the directory (through "..", or a symbolic
// link that points out of it) or cannot be read is listed with an empty
// digest rather than followed: every file is read through an os.Root of
// the document's directory. The document itself may be a link; its
// directory is then the target's.
func Digests(file string) ([]Digest, error) {
	real, err := filepath.EvalSymlinks(file)
	if err != nil {
		return nil, fault.Wrap(fault.NotFound, err, "digest documents", "%s", file)
	}
	base := filepath.Dir(real)
	rel := filepath.Base(real)
	root, err := os.OpenRoot(base)
	if err != nil {
		return nil, fault.Wrap(fault.NotFound, err, "digest documents", "%s", file)
	}
	defer root.Close()
	seen := map[string]bool{}
	var out []Digest
	queue := []string{rel}
	for len(queue) > 0 && len(out) < maxDigestFiles {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		data, err := readIn(root, p)
		if err != nil {
			if p == rel {
				return nil, fault.Wrap(fault.NotFound, err, "digest documents", "%s", file)
			}
			out = append(out, Digest{Path: p})
			continue
		}
		sum := sha256.Sum256(data)
		out = append(out, Digest{Path: p, SHA256: hex.EncodeToString(sum[:])})
		switch strings.ToLower(path.Ext(p)) {
		case ".yaml", ".yml", ".json":
			for _, ref := range fileRefs(data) {
				clean := path.Clean(ref)
				if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
					continue
				}
				queue = append(queue, clean)
			}
		}
	}
	slices.SortFunc(out, func(a, b Digest) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// maxDocBytes bounds a file Digests or the script lookup reads whole.
const maxDocBytes = 64 << 20

// readIn reads the file at the slash-separated path p inside root: a path
// or link that leaves root, or a file that is not regular or larger than
// maxDocBytes, is an error.
func readIn(root *os.Root, p string) ([]byte, error) {
	// Stat first: opening a pipe would wait for a writer.
	if fi, err := root.Stat(filepath.FromSlash(p)); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fault.New(fault.Validation, "read document", "%s: not a regular file", p)
	}
	f, err := root.Open(filepath.FromSlash(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxDocBytes {
		return nil, fault.New(fault.Validation, "read document", "%s: not a regular file of at most %d bytes", p, maxDocBytes)
	}
	return io.ReadAll(io.LimitReader(f, maxDocBytes))
}

// fileRefs returns the string values of the "file" keys of a YAML (or
// JSON) document, wherever they are.
func fileRefs(data []byte) []string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return nil
	}
	var out []string
	var walk func(n *yaml.Node, depth int)
	walk = func(n *yaml.Node, depth int) {
		if n == nil || depth > 64 {
			return
		}
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == "file" && v.Kind == yaml.ScalarNode && v.Value != "" && !strings.Contains(v.Value, "${") {
					out = append(out, v.Value)
				}
				walk(v, depth+1)
			}
			return
		}
		for _, c := range n.Content {
			walk(c, depth+1)
		}
	}
	walk(&root, 0)
	return out
}

// ChangedFiles compares two digest lists: the paths whose digest differs
// or that only one of them has.
func ChangedFiles(recorded, now []Digest) []string {
	a, b := map[string]string{}, map[string]string{}
	for _, d := range recorded {
		a[d.Path] = d.SHA256
	}
	for _, d := range now {
		b[d.Path] = d.SHA256
	}
	var out []string
	for p, s := range a {
		if t, ok := b[p]; !ok || t != s {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// scriptFiles maps the script nodes of the graph documents reachable from
// the deployment document file (relative to base) to the file their
// source or module names: a script is named after its node unless its
// config names it, and a divergence names the file instead.
func scriptFiles(base, file string) map[string]string {
	out := map[string]string{}
	for _, data := range graphDocs(base, file) {
		var g struct {
			Nodes []struct {
				ID     string `yaml:"id"`
				Config struct {
					Name   string `yaml:"name"`
					Source struct {
						File string `yaml:"file"`
					} `yaml:"source"`
					Module struct {
						File string `yaml:"file"`
					} `yaml:"module"`
				} `yaml:"config"`
			} `yaml:"nodes"`
		}
		if yaml.Unmarshal(data, &g) == nil {
			for _, n := range g.Nodes {
				name := n.Config.Name
				if name == "" {
					name = n.ID
				}
				if f := n.Config.Source.File + n.Config.Module.File; f != "" && name != "" {
					out[name] = f
				}
			}
		}
	}
	return out
}

// graphDocs returns the contents of the deployment document file
// (relative to base) and of the YAML and JSON documents reachable from it.
func graphDocs(base, file string) [][]byte {
	root, err := os.OpenRoot(base)
	if err != nil {
		return nil
	}
	defer root.Close()
	var out [][]byte
	seen := map[string]bool{}
	queue := []string{file}
	for len(queue) > 0 && len(seen) < maxDigestFiles {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		data, err := readIn(root, p)
		if err != nil {
			continue // outside base, or unreadable
		}
		out = append(out, data)
		for _, ref := range fileRefs(data) {
			switch strings.ToLower(path.Ext(ref)) {
			case ".yaml", ".yml", ".json":
				queue = append(queue, path.Clean(ref))
			}
		}
	}
	return out
}

// moduleFiles maps the nodes of the documents reachable from the
// deployment document file whose config names a WebAssembly module file
// (config.module.file), wherever the graph is (a graph file or inline in
// the deployment), to that file.
func moduleFiles(base, file string) map[string]string {
	out := map[string]string{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if id, ok := v["id"].(string); ok {
				if cfg, ok := v["config"].(map[string]any); ok {
					if m, ok := cfg["module"].(map[string]any); ok {
						if f, ok := m["file"].(string); ok && f != "" {
							out[id] = f
						}
					}
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	for _, data := range graphDocs(base, file) {
		var v any
		if yaml.Unmarshal(data, &v) == nil {
			walk(v)
		}
	}
	return out
}

// fileWhere rewrites a script position "name:line:col" to name the
// script's file, when the graph documents say which file it is.
func fileWhere(where string, files map[string]string) string {
	i := strings.Index(where, ":")
	if i <= 0 {
		return where
	}
	if f, ok := files[where[:i]]; ok {
		return f + where[i:]
	}
	return where
}
