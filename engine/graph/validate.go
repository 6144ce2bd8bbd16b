package graph

import (
	"errors"
	"strings"
)

const opValidate = "validate graph"

// Validate checks the document's structure (REF 5.1.2): a name; an
// entry that is a node; at least one node; node ids that are non-blank,
// unique and do not start with the reserved "__"; a type on every node;
// edges from a node to a node or to End. It reports every problem it
// finds, joined, each a Validation *DocumentError naming the node or edge.
// Node types, configs and conditions are checked by Build.
func (d *Document) Validate() error {
	if d == nil {
		return docErr(opValidate, "", "no document")
	}
	var errs []error
	add := func(path, format string, args ...any) {
		errs = append(errs, docErr(opValidate, path, format, args...))
	}
	if strings.TrimSpace(d.Name) == "" {
		add("name", "is required")
	}
	if len(d.Nodes) == 0 {
		add("nodes", "at least one node is required")
	}
	ids := make(map[string]int, len(d.Nodes))
	for i, n := range d.Nodes {
		switch {
		case strings.TrimSpace(n.ID) == "":
			add(nodeField(i, "id"), "is required")
		case strings.HasPrefix(n.ID, ReservedPrefix):
			add(nodeField(i, "id"), "%q: ids starting with %q are reserved", n.ID, ReservedPrefix)
		default:
			if j, dup := ids[n.ID]; dup {
				add(nodeField(i, "id"), "%q is already the id of nodes[%d]", n.ID, j)
			} else {
				ids[n.ID] = i
			}
		}
		if strings.TrimSpace(n.Type) == "" {
			add(nodeField(i, "type"), "node %q: is required", n.ID)
		}
	}
	switch _, ok := ids[d.Entry]; {
	case strings.TrimSpace(d.Entry) == "":
		add("entry", "is required")
	case !ok:
		add("entry", "%q is not a node", d.Entry)
	}
	for i, e := range d.Edges {
		if _, ok := ids[e.From]; !ok {
			add(edgeField(i, "from"), "%q is not a node", e.From)
		}
		if _, ok := ids[e.To]; !ok && e.To != End {
			add(edgeField(i, "to"), "%q is neither a node nor %s", e.To, End)
		}
	}
	return errors.Join(errs...)
}
