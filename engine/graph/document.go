package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/corral-rt/corral/fault"
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
