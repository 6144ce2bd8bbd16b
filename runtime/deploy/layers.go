package deploy

import (
	"cmp"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"gopkg.in/yaml.v3"
)

// Layer is one piece of a layered document: a complete base document or a
// partial overlay (YAML or JSON).
type Layer struct {
	// Name names the layer in the provenance; required and unique.
	Name string
	// Priority orders the merge: layers merge in ascending priority, so a
	// higher priority wins. Layers of equal priority keep their order.
	Priority int
	// Data is the layer's text.
	Data []byte
	// File names the layer in positions and errors; "" means Name.
	File string
}

// Provenance maps each leaf path of a merged document (a scalar, a
// sequence and every scalar in it, an empty mapping) to the name of the
// layer that set it, for example "agents.qa.engine.settings.model" →
// "production".
type Provenance map[string]string

// LoadLayers merges layers into one document and validates it. The layer
// of lowest priority must be a complete, valid document on its own; the
// others may be partial. Mappings are merged key by key at every depth
// (resources, agents, settings, runtime); sequences and scalars are
// replaced whole, and a null replaces what it covers. Positions name the
// layer file that wrote each part. cfg.Filename names the merged document
// ("": the base layer's file) and cfg.BaseDir sets its base directory.
func LoadLayers(layers []Layer, cfg ParseConfig) (*Document, Provenance, error) {
	sorted, err := sortLayers(layers)
	if err != nil {
		return nil, nil, err
	}
	m := &merger{files: map[*yaml.Node]string{}, owner: map[*yaml.Node]string{}}
	var merged *yaml.Node
	for i, l := range sorted {
		file := cmp.Or(l.File, l.Name)
		if err := checkSize(l.Data, file, cfg.maxBytes()); err != nil {
			return nil, nil, err
		}
		if i == 0 {
			if _, err := ParseWithConfig(l.Data, ParseConfig{Filename: file, BaseDir: cfg.BaseDir, MaxBytes: cfg.MaxBytes}); err != nil {
				return nil, nil, err
			}
		}
		root, err := parseNode(l.Data, file)
		if err != nil {
			return nil, nil, err
		}
		if root == nil || isNull(root) {
			continue
		}
		if root.Kind != yaml.MappingNode {
			return nil, nil, syntaxError(file, root.Line, "a layer must be a mapping, got %s", describe(root))
		}
		m.mark(root, file, l.Name, 0)
		if merged, err = m.merge(merged, root, atRoot); err != nil {
			return nil, nil, err
		}
	}
	doc, err := decodeDocument(merged, cmp.Or(cfg.Filename, cmp.Or(sorted[0].File, sorted[0].Name)), m.files)
	if err != nil {
		return nil, nil, err
	}
	doc.baseDir = cfg.BaseDir
	if err := doc.Validate(); err != nil {
		return nil, nil, err
	}
	prov := Provenance{}
	m.provenance(merged, "", prov, 0)
	return doc, prov, nil
}

func sortLayers(layers []Layer) ([]Layer, error) {
	if len(layers) == 0 {
		return nil, fault.New(fault.Validation, "load layers", "no layers")
	}
	seen := map[string]bool{}
	for i, l := range layers {
		switch {
		case strings.TrimSpace(l.Name) == "":
			return nil, fault.New(fault.Validation, "load layers", "layer %d: name is required", i)
		case seen[l.Name]:
			return nil, fault.New(fault.Conflict, "load layers", "layer %q is given twice", l.Name)
		}
		seen[l.Name] = true
	}
	sorted := slices.Clone(layers)
	slices.SortStableFunc(sorted, func(a, b Layer) int { return cmp.Compare(a.Priority, b.Priority) })
	return sorted, nil
}

// merger merges node trees and remembers the file and layer of every node.
type merger struct {
	files map[*yaml.Node]string
	owner map[*yaml.Node]string
}

func (m *merger) mark(n *yaml.Node, file, layer string, depth int) {
	if depth > maxDepth+2 {
		return // decoding refuses such a tree anyway
	}
	m.files[n], m.owner[n] = file, layer
	for _, c := range n.Content {
		m.mark(c, file, layer, depth+1)
	}
}

// merge returns base with over applied: mappings merge key by key,
// anything else in over replaces what base has, and so does a component
// whose kind or impl over changes (replacesComponent). at says what the
// two nodes are in the document.
func (m *merger) merge(base, over *yaml.Node, at place) (*yaml.Node, error) {
	if base == nil || base.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode ||
		(at == atComponent && replacesComponent(base, over)) {
		return over, nil
	}
	overAt := make(map[string]int, len(over.Content)/2)
	for i := 0; i+1 < len(over.Content); i += 2 {
		k := over.Content[i]
		if _, dup := overAt[k.Value]; dup {
			return nil, &Error{Pos: Position{File: m.files[k], Line: k.Line, Column: k.Column},
				Err: fault.New(fault.Validation, "", "key %q is repeated", k.Value)}
		}
		overAt[k.Value] = i
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: base.Tag, Line: base.Line, Column: base.Column}
	m.files[out], m.owner[out] = m.files[base], m.owner[base]
	used := map[string]bool{}
	for i := 0; i+1 < len(base.Content); i += 2 {
		k, v := base.Content[i], base.Content[i+1]
		j, ok := overAt[k.Value]
		if !ok || used[k.Value] {
			out.Content = append(out.Content, k, v)
			continue
		}
		used[k.Value] = true
		ov := over.Content[j+1]
		if v.Kind == yaml.MappingNode && ov.Kind == yaml.MappingNode {
			mv, err := m.merge(v, ov, at.child(k.Value))
			if err != nil {
				return nil, err
			}
			if mv == ov { // replaced whole: the layer that wrote it names its place
				k = over.Content[j]
			}
			out.Content = append(out.Content, k, mv)
			continue
		}
		out.Content = append(out.Content, over.Content[j], ov)
	}
	for i := 0; i+1 < len(over.Content); i += 2 {
		if k := over.Content[i]; !used[k.Value] {
			out.Content = append(out.Content, k, over.Content[i+1])
		}
	}
	return out, nil
}

// place is what a node is in a document, as far as merging cares.
type place int

const (
	atOther     place = iota
	atRoot            // the document
	atResources       // resources
	atAgents          // agents
	atAgent           // agents.<id>
	atComponent       // resources.<name> or agents.<id>.engine: kind, impl, deps, settings
)

// child returns the place of the value of key under a node at p.
func (p place) child(key string) place {
	switch {
	case p == atRoot && key == "resources":
		return atResources
	case p == atRoot && key == "agents":
		return atAgents
	case p == atResources:
		return atComponent
	case p == atAgents:
		return atAgent
	case p == atAgent && key == "engine":
		return atComponent
	}
	return atOther
}

// replacesComponent reports whether over declares another component than
// base: it names a kind or an impl that base does not have. Its deps and
// settings are then those of another factory, which base's would only
// spoil, so over replaces base whole.
func replacesComponent(base, over *yaml.Node) bool {
	for _, key := range []string{"kind", "impl"} {
		if ov, ok := mappingValue(over, key); ok {
			if bv, _ := mappingValue(base, key); scalarText(bv) != scalarText(ov) || isNull(ov) {
				return true
			}
		}
	}
	return false
}

// mappingValue returns the value of key in mapping n.
func mappingValue(n *yaml.Node, key string) (*yaml.Node, bool) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1], true
		}
	}
	return nil, false
}

// scalarText is the text of a scalar node, "" for anything else.
func scalarText(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode || isNull(n) {
		return ""
	}
	return n.Value
}

// provenance records the layer of every leaf under n.
func (m *merger) provenance(n *yaml.Node, path string, prov Provenance, depth int) {
	if depth > maxDepth {
		return
	}
	switch {
	case n.Kind == yaml.MappingNode && len(n.Content) > 0:
		for i := 0; i+1 < len(n.Content); i += 2 {
			m.provenance(n.Content[i+1], childPath(path, n.Content[i].Value), prov, depth+1)
		}
	case n.Kind == yaml.SequenceNode:
		prov[path] = m.owner[n]
		for i, c := range n.Content {
			m.provenance(c, itemPath(path, i), prov, depth+1)
		}
	default:
		prov[path] = m.owner[n]
	}
}
