package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
	"gopkg.in/yaml.v3"
)

// parseNode turns document bytes into a YAML node tree: JSON when the first
// non-space byte is '{', YAML otherwise. It returns the root content node,
// or nil for an empty document. Errors are *Error with a position.
func parseNode(data []byte, file string) (*yaml.Node, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return parseJSON(data, file)
	}
	return parseYAML(data, file)
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// parseYAML parses exactly one YAML document.
func parseYAML(data []byte, file string) (root *yaml.Node, err error) {
	defer func() {
		// The YAML parser is third-party code; a panic on hostile input
		// must not take the process down.
		if r := recover(); r != nil {
			root, err = nil, syntaxError(file, 1, "yaml: unreadable document")
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlError(err, file)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		line := next.Line
		if line == 0 {
			line = lastLine(data)
		}
		return nil, syntaxError(file, line, "a second YAML document is not allowed")
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

// yamlError places a YAML syntax error. The parser reports lines counted
// from 1 for scanner errors but from 0 for parser errors (and leaves out
// line 0), so the line of a parser error is corrected here.
func yamlError(err error, file string) *Error {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	if line == 0 || isParserProblem(msg) {
		line++
	}
	return syntaxError(file, line, "%s", msg)
}

func isParserProblem(msg string) bool {
	switch msg {
	case "did not find expected ',' or ']'", "did not find expected ',' or '}'", "did not find expected '-' indicator",
		"did not find expected <document start>", "did not find expected <stream-start>", "did not find expected key",
		"did not find expected node content", "found duplicate %TAG directive", "found duplicate %YAML directive",
		"found incompatible YAML document", "found undefined tag handle":
		return true
	}
	return false
}

func syntaxError(file string, line int, format string, args ...any) *Error {
	return &Error{Pos: Position{File: file, Line: line}, Err: fault.New(fault.Validation, "", format, args...)}
}

func lastLine(data []byte) int { return bytes.Count(data, []byte("\n")) + 1 }

// jsonParser builds a YAML node tree from JSON, giving each node the line
// and column of its first byte so that JSON documents get positions too.
type jsonParser struct {
	data  []byte
	dec   *json.Decoder
	lines []int // offsets at which lines start
	file  string
}

func parseJSON(data []byte, file string) (*yaml.Node, error) {
	p := &jsonParser{data: data, dec: json.NewDecoder(bytes.NewReader(data)), lines: []int{0}, file: file}
	p.dec.UseNumber()
	for i, b := range data {
		if b == '\n' {
			p.lines = append(p.lines, i+1)
		}
	}
	root, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.offset()
	if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, p.errAt(off, "trailing data after the JSON document")
	}
	return root, nil
}

// offset returns the offset of the next token.
func (p *jsonParser) offset() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *jsonParser) position(off int) (line, col int) {
	i := sort.Search(len(p.lines), func(i int) bool { return p.lines[i] > off })
	return i, off - p.lines[i-1] + 1
}

func (p *jsonParser) errAt(off int, format string, args ...any) *Error {
	line, _ := p.position(off)
	return syntaxError(p.file, line, format, args...)
}

func (p *jsonParser) token() (json.Token, int, error) {
	off := p.offset()
	tok, err := p.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(se.Offset)
		}
		if errors.Is(err, io.EOF) {
			err = errors.New("unexpected end of JSON input")
		}
		return nil, off, p.errAt(min(off, len(p.data)), "json: %v", err)
	}
	return tok, off, nil
}

func (p *jsonParser) value(depth int) (*yaml.Node, error) {
	tok, off, err := p.token()
	if err != nil {
		return nil, err
	}
	if depth > maxDepth {
		return nil, p.errAt(off, "nesting is deeper than %d levels", maxDepth)
	}
	line, col := p.position(off)
	n := &yaml.Node{Line: line, Column: col}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return n, p.object(n, depth)
		}
		return n, p.array(n, depth)
	case string:
		n.Kind, n.Tag, n.Value, n.Style = yaml.ScalarNode, "!!str", t, yaml.DoubleQuotedStyle
	case json.Number:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, numberTag(t), string(t)
	case bool:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", strconv.FormatBool(t)
	default:
		n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
	}
	return n, nil
}

func numberTag(n json.Number) string {
	if _, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return "!!int"
	}
	if _, err := strconv.ParseUint(string(n), 10, 64); err == nil {
		return "!!int"
	}
	return "!!float"
}

func (p *jsonParser) object(n *yaml.Node, depth int) error {
	n.Kind, n.Tag = yaml.MappingNode, "!!map"
	for p.dec.More() {
		key, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		val, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		n.Content = append(n.Content, key, val)
	}
	_, _, err := p.token() // '}'
	return err
}

func (p *jsonParser) array(n *yaml.Node, depth int) error {
	n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
	for p.dec.More() {
		v, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		n.Content = append(n.Content, v)
	}
	_, _, err := p.token() // ']'
	return err
}
