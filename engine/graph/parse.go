package graph

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/corral-rt/corral/runtime/resource"
)

const opParse = "parse graph"

// Parse reads a graph document from JSON or YAML (YAML is converted to
// JSON first). Decoding is strict: an unknown key, a value of the wrong
// type or a repeated key is a Validation *DocumentError naming the place
// (nodes[2].config, edges[0]). A document over MaxDocumentBytes is
// refused. Parse does not Validate the document.
func Parse(data []byte) (*Document, error) {
	if len(data) > MaxDocumentBytes {
		return nil, docErr(opParse, "", "the document is %d bytes, more than the %d allowed", len(data), MaxDocumentBytes)
	}
	raw, err := resource.YAMLToJSON(data)
	if err != nil {
		return nil, &DocumentError{Op: opParse, Err: err}
	}
	return decodeDocument(raw)
}

// decodeDocument decodes the JSON form of a document strictly.
func decodeDocument(raw json.RawMessage) (*Document, error) {
	f, err := fields(raw, "", "name", "version", "description", "entry", "nodes", "edges")
	if err != nil {
		return nil, err
	}
	doc := &Document{}
	for _, s := range []struct {
		key string
		dst *string
	}{{"name", &doc.Name}, {"version", &doc.Version}, {"description", &doc.Description}, {"entry", &doc.Entry}} {
		if *s.dst, err = str(f[s.key], s.key); err != nil {
			return nil, err
		}
	}
	nodes, err := array(f["nodes"], "nodes")
	if err != nil {
		return nil, err
	}
	for i, n := range nodes {
		node, err := decodeNode(n, i)
		if err != nil {
			return nil, err
		}
		doc.Nodes = append(doc.Nodes, node)
	}
	edges, err := array(f["edges"], "edges")
	if err != nil {
		return nil, err
	}
	for i, e := range edges {
		edge, err := decodeEdge(e, i)
		if err != nil {
			return nil, err
		}
		doc.Edges = append(doc.Edges, edge)
	}
	return doc, nil
}

func decodeNode(raw json.RawMessage, i int) (Node, error) {
	f, err := fields(raw, nodeField(i, ""), "id", "type", "config", "skip_condition")
	if err != nil {
		return Node{}, err
	}
	var n Node
	if n.ID, err = str(f["id"], nodeField(i, "id")); err != nil {
		return Node{}, err
	}
	if n.Type, err = str(f["type"], nodeField(i, "type")); err != nil {
		return Node{}, err
	}
	if n.SkipCondition, err = str(f["skip_condition"], nodeField(i, "skip_condition")); err != nil {
		return Node{}, err
	}
	if c := bytes.TrimSpace(f["config"]); len(c) > 0 && !bytes.Equal(c, []byte("null")) {
		n.Config = slices.Clone(c)
	}
	return n, nil
}

func decodeEdge(raw json.RawMessage, i int) (Edge, error) {
	f, err := fields(raw, edgeField(i, ""), "from", "to", "condition")
	if err != nil {
		return Edge{}, err
	}
	var e Edge
	if e.From, err = str(f["from"], edgeField(i, "from")); err != nil {
		return Edge{}, err
	}
	if e.To, err = str(f["to"], edgeField(i, "to")); err != nil {
		return Edge{}, err
	}
	if e.Condition, err = str(f["condition"], edgeField(i, "condition")); err != nil {
		return Edge{}, err
	}
	return e, nil
}

// fields decodes raw as an object whose keys must be among known; the
// first unknown key (in sorted order) is an error naming path.
func fields(raw json.RawMessage, path string, known ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, docErr(opParse, path, "want an object, got %s", jsonKind(raw))
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, docErr(opParse, path, "unknown field %q (known: %v)", unknown[0], known)
	}
	return m, nil
}

// str decodes an optional string; absent and null give "".
func str(raw json.RawMessage, path string) (string, error) {
	if isAbsent(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", docErr(opParse, path, "want a string, got %s", jsonKind(raw))
	}
	return s, nil
}

// array decodes an optional array; absent and null give none.
func array(raw json.RawMessage, path string) ([]json.RawMessage, error) {
	if isAbsent(raw) {
		return nil, nil
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, docErr(opParse, path, "want an array, got %s", jsonKind(raw))
	}
	return a, nil
}

func isAbsent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// jsonKind names the JSON type of raw for messages.
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
