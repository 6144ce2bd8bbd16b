package deploy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/internal/docfile"
	"github.com/corral-rt/corral/runtime/agent"
)

// Document is a parsed deployment document. Parse and ParseFile fill it and
// remember where each part was written, so that later errors can name the
// file, the line and the path. A Document is not changed by Build; it may be
// read by several goroutines at once.
type Document struct {
	// Version is the document's version; any non-empty string.
	Version string
	// Resources maps a resource name to its entry.
	Resources map[string]ResourceEntry
	// Agents maps an agent id to its definition.
	Agents map[string]agent.Definition
	// Runtime is the runtime: subtree as JSON, opaque to this package; nil
	// when the document has none.
	Runtime json.RawMessage

	file    string
	baseDir string
	index   map[string]Position
	text    map[string]int // see decoder.noteText
}

// ResourceEntry declares one resource: the factory that builds it (Kind and
// Impl), its dependencies (role → reference) and its settings as JSON.
type ResourceEntry struct {
	Kind     string            `json:"kind"`
	Impl     string            `json:"impl,omitempty"`
	Deps     map[string]string `json:"deps,omitempty"`
	Settings json.RawMessage   `json:"settings,omitempty"`
}

// Position is a place in a document. Line and Column start at 1; zero means
// unknown.
type Position struct {
	File   string
	Line   int
	Column int
}

// String returns "file:line", or as much of it as is known.
func (p Position) String() string {
	switch {
	case p.File != "" && p.Line > 0:
		return p.File + ":" + strconv.Itoa(p.Line)
	case p.Line > 0:
		return "line " + strconv.Itoa(p.Line)
	}
	return p.File
}

// Error is a document error: where it is (file and line), which part of the
// document it concerns (a dotted path such as agents.qa.engine.settings or
// agents.qa.referees[1]) and what is wrong. Err carries the fault kind, so
// errors.Is(err, fault.Validation) and fault.KindOf work through it.
type Error struct {
	Pos  Position
	Path string
	Err  error
}

// Error formats as "file:line: path: message", leaving out unknown parts.
func (e *Error) Error() string {
	parts := make([]string, 0, 3)
	if p := e.Pos.String(); p != "" {
		parts = append(parts, p)
	}
	if e.Path != "" {
		parts = append(parts, e.Path)
	}
	if e.Err != nil {
		parts = append(parts, e.Err.Error())
	}
	return strings.Join(parts, ": ")
}

// Unwrap returns the cause, which carries the kind.
func (e *Error) Unwrap() error { return e.Err }

// ParseConfig names and places a document for ParseWithConfig,
// ParseFileWithConfig and LoadLayers. The zero value is what Parse and
// ParseFile use.
type ParseConfig struct {
	// Filename names the document in positions and errors. "": no name
	// (ParseFile: the path; LoadLayers: the base layer's file).
	Filename string
	// BaseDir is the directory that settings file references are relative
	// to. "": the working directory (ParseFile: the file's directory).
	BaseDir string
	// MaxBytes caps the size of the document (of each layer, for
	// LoadLayers); <= 0 means MaxDocumentBytes.
	MaxBytes int64
}

// MaxDocumentBytes is the default cap on the size of a deployment
// document. A document is decoded into a node tree that costs tens of
// bytes of memory per byte of YAML, so the cap is checked before any
// decoding; 1 MiB is the cap of a graph document too, and far above a
// hand-written deployment (inline graphs that grow large belong in
// {file} references, each under its own cap).
const MaxDocumentBytes = 1 << 20

func (c ParseConfig) maxBytes() int64 {
	if c.MaxBytes <= 0 {
		return MaxDocumentBytes
	}
	return c.MaxBytes
}

// checkSize refuses a document over the cap before it is decoded.
func checkSize(data []byte, file string, limit int64) error {
	if int64(len(data)) <= limit {
		return nil
	}
	return &Error{Pos: Position{File: file}, Err: fault.New(fault.Validation, "",
		"the document is %d bytes: larger than %d bytes, the cap", len(data), limit)}
}

// Parse decodes a deployment document strictly and validates it (Validate).
// Input whose first non-space byte is '{' is JSON; anything else is YAML
// holding exactly one document. Unknown fields, repeated keys, aliases and
// values of the wrong type are errors, and so is a document over
// MaxDocumentBytes (checked before decoding). Every error is an *Error
// whose kind is Validation. The document has no file name, and settings
// file references are relative to the working directory; ParseWithConfig
// sets both.
func Parse(data []byte) (*Document, error) { return ParseWithConfig(data, ParseConfig{}) }

// ParseWithConfig is Parse with the file name and base directory of cfg.
func ParseWithConfig(data []byte, cfg ParseConfig) (*Document, error) {
	if err := checkSize(data, cfg.Filename, cfg.maxBytes()); err != nil {
		return nil, err
	}
	root, err := parseNode(data, cfg.Filename)
	if err != nil {
		return nil, err
	}
	doc, err := decodeDocument(root, cfg.Filename, nil)
	if err != nil {
		return nil, err
	}
	doc.baseDir = cfg.BaseDir
	if err := doc.Validate(); err != nil {
		return nil, err
	}
	return doc, nil
}

// ParseFile reads and parses the document at path. Positions name path, and
// the base directory is the file's directory. Only a regular file is read
// (a directory, a named pipe or a device is a Validation error, also
// behind a symbolic link; the open never blocks), and no more than the cap
// is read: a larger file is refused before it is decoded.
func ParseFile(path string) (*Document, error) { return ParseFileWithConfig(path, ParseConfig{}) }

// ParseFileWithConfig is ParseFile where a non-empty cfg.Filename or
// cfg.BaseDir replaces the path or the file's directory.
func ParseFileWithConfig(path string, cfg ParseConfig) (*Document, error) {
	data, err := docfile.ReadFile(nil, path, cfg.maxBytes())
	if err != nil {
		kind := fault.KindOr(err, fault.Validation)
		if errors.Is(err, fs.ErrNotExist) {
			kind = fault.NotFound
		}
		return nil, &Error{Pos: Position{File: path}, Err: fault.Wrap(kind, err, "read document", "")}
	}
	if cfg.Filename == "" {
		cfg.Filename = path
	}
	if cfg.BaseDir == "" {
		cfg.BaseDir = filepath.Dir(path)
	}
	return ParseWithConfig(data, cfg)
}

// File returns the document's file name ("" when none was given).
func (d *Document) File() string { return d.file }

// BaseDir returns the directory that settings file references are relative
// to ("" means the working directory).
func (d *Document) BaseDir() string { return d.baseDir }

// Pos returns where the part of the document at path is written, for
// example "agents.qa.engine.settings.graph" or "agents.qa.referees[1].type".
// For a mapping entry it is the position of the key. It reports false for
// paths the document does not spell out and for documents that were not
// parsed.
func (d *Document) Pos(path string) (Position, bool) {
	p, ok := d.index[path]
	return p, ok
}

// posOf returns the position of path or of its nearest written ancestor.
func (d *Document) posOf(path string) Position {
	for {
		if p, ok := d.index[path]; ok {
			return p
		}
		cut := max(strings.LastIndexByte(path, '.'), strings.LastIndexByte(path, '['))
		if cut <= 0 {
			if p, ok := d.index[""]; ok {
				return p
			}
			return Position{File: d.file}
		}
		path = path[:cut]
	}
}

// errorAt returns a document error about path, placed at the most precise
// written position among at (tried first) and path.
func (d *Document) errorAt(path, at string, err error) *Error {
	pos := d.posOf(path)
	if at != "" {
		if p, ok := d.index[at]; ok {
			pos = p
		} else if p := d.posOf(at); p.Line > pos.Line {
			pos = p
		}
	}
	return &Error{Pos: pos, Path: path, Err: err}
}

// invalid returns a Validation document error about path.
func (d *Document) invalid(path, at, format string, args ...any) *Error {
	return d.errorAt(path, at, fault.New(fault.Validation, "", format, args...))
}

// Hash returns a stable hash of the document's normalized content: the
// same version, resources, agents and runtime section give the same hash
// whatever the file name, key order, comments or layout.
func (d *Document) Hash() string {
	norm := struct {
		Version   string                      `json:"version"`
		Resources map[string]ResourceEntry    `json:"resources,omitempty"`
		Agents    map[string]agent.Definition `json:"agents,omitempty"`
		Runtime   json.RawMessage             `json:"runtime,omitempty"`
	}{d.Version, d.Resources, d.Agents, d.Runtime}
	data, err := json.Marshal(norm)
	if err != nil {
		// A hand-built document with invalid JSON settings: hash what it says.
		data = fmt.Appendf(nil, "%#v", norm)
	} else {
		data = canonicalJSON(data)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// canonicalJSON re-encodes data with sorted keys and no insignificant
// space; it returns data unchanged when it does not decode.
func canonicalJSON(data []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return data
	}
	out, err := json.Marshal(v)
	if err != nil {
		return data
	}
	return out
}

// marshalJSON encodes v compactly without escaping <, > and &.
func marshalJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
