package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
)

// End is the pseudo-node an edge targets to end its branch.
const End = "__end__"

// ReservedPrefix starts the names reserved for the kernel: node ids may not
// use it, and board vars that start with it belong to the engine.
const ReservedPrefix = "__"

// The board vars the engine writes or shows to conditions.
const (
	// VarIterations is what conditions see as the number of node runs so
	// far (the engine's value wins over a board var of the same name).
	VarIterations = "__iterations"
	// VarInterruptedNode names the node a run was interrupted at.
	VarInterruptedNode = "__interrupted_node"
)

// MaxDocumentBytes caps the size of a graph document Parse accepts.
const MaxDocumentBytes = 1 << 20

// Document is a graph document: nodes joined by edges, run from entry.
// Parse reads one; Validate checks its structure; Build turns it into an
// Engine.
type Document struct {
	Name        string `json:"name"`
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	Entry       string `json:"entry"`
	Nodes       []Node `json:"nodes"`
	Edges       []Edge `json:"edges,omitempty"`
}

// Node is one node of a graph.
type Node struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Config is the node's configuration, a JSON object whose keys the
	// node type defines. It may hold ${board.path} references.
	Config json.RawMessage `json:"config,omitempty"`
	// SkipCondition is a JavaScript expression; when it is true the node is
	// skipped (it still routes).
	SkipCondition string `json:"skip_condition,omitempty"`
}

// Edge routes from one node to another (or to End) when its condition,
// a JavaScript expression, is empty or true.
type Edge struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Condition string `json:"condition,omitempty"`
}

// SpecVersion is the document's version, or its name when the version is
// empty. Checkpoints carry it, and a checkpoint of another spec version
// does not resume.
func (d *Document) SpecVersion() string {
	if d.Version != "" {
		return d.Version
	}
	return d.Name
}

// node returns the node with id and its index.
func (d *Document) node(id string) (Node, int, bool) {
	for i, n := range d.Nodes {
		if n.ID == id {
			return n, i, true
		}
	}
	return Node{}, -1, false
}

// DocumentError is a problem at one place of a graph document. Path names
// the place the way the document spells it ("nodes[2].config",
// "edges[0].to"); it is empty for the document as a whole. Its kind is
// Kind, Validation when nil.
type DocumentError struct {
	Op   string // the operation: "parse graph", "validate graph", "build graph"
	Path string
	Msg  string
	Kind *fault.Kind
	Err  error // the cause; may be nil
}

// Error formats as "op: path: msg: cause", leaving out empty parts.
func (e *DocumentError) Error() string {
	var b strings.Builder
	for _, s := range []string{e.Op, e.Path, e.Msg} {
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(s)
	}
	if e.Err != nil {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes the kind and the cause.
func (e *DocumentError) Unwrap() []error {
	k := e.Kind
	if k == nil {
		k = fault.Validation
	}
	if e.Err == nil {
		return []error{k}
	}
	return []error{k, e.Err}
}

// docErr returns a Validation DocumentError.
func docErr(op, path, format string, args ...any) *DocumentError {
	return &DocumentError{Op: op, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// nodeField names a field of node i: nodes[2].config, or nodes[2] for
// the node itself.
func nodeField(i int, field string) string {
	if field == "" {
		return fmt.Sprintf("nodes[%d]", i)
	}
	return fmt.Sprintf("nodes[%d].%s", i, field)
}

// edgeField names a field of edge i: edges[3].condition.
func edgeField(i int, field string) string {
	if field == "" {
		return fmt.Sprintf("edges[%d]", i)
	}
	return fmt.Sprintf("edges[%d].%s", i, field)
}

// WithPathPrefix returns err with prefix put before the path of every
// DocumentError in it (err itself, or the errors of an errors.Join), for
// a document that sits inside another: WithPathPrefix(err,
// "settings.graph") turns "nodes[2].config" into
// "settings.graph.nodes[2].config". Other errors are returned unchanged.
func WithPathPrefix(err error, prefix string) error {
	var de *DocumentError
	switch {
	case err == nil || prefix == "":
		return err
	case errors.As(err, &de) && err == error(de):
		out := *de
		out.Path = joinPath(prefix, de.Path)
		return &out
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok || !slices.ContainsFunc(j.Unwrap(), isDocumentError) {
		return err // not a join of document errors
	}
	errs := j.Unwrap()
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = WithPathPrefix(e, prefix)
	}
	return errors.Join(out...)
}

func isDocumentError(err error) bool {
	_, ok := err.(*DocumentError)
	return ok
}

func joinPath(prefix, path string) string {
	switch {
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	}
	return prefix + "." + path
}

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
