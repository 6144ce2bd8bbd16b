package deploy

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
	"gopkg.in/yaml.v3"
)

// DecodeSection decodes raw, the JSON of the part of doc at path (for
// example the runtime section, doc.Runtime at "runtime", after its strings
// were expanded), strictly into out with the rules Parse applies to the
// whole document: fields are matched by their json tag (the fields of an
// embedded struct are promoted); unknown fields, repeated keys and values
// of the wrong type are Validation errors; a null or an absent field leaves
// the value as it is, so defaults set in out before the call stay; a
// time.Duration is a Go duration ("90s", "10m").
//
// Because expansion (${env:NAME}) yields strings, an integer, boolean or
// number field of a section also takes a string ("256", "true"), and
// white space around the text is ignored.
//
// Every error is an *Error whose path is written from path down, placed at
// the file and line where doc writes that part; with a nil doc, or a doc
// that was not parsed, the position is unknown. out must be a non-nil
// pointer.
func DecodeSection(doc *Document, path string, raw json.RawMessage, out any) error {
	sec := &section{doc: doc, paths: map[*yaml.Node]string{}}
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return &Error{Pos: sec.at(path), Path: path, Err: fault.New(fault.Internal, "decode section", "out must be a non-nil pointer, got %T", out)}
	}
	root, err := parseJSON(raw, "")
	if err != nil {
		if de := (*Error)(nil); errors.As(err, &de) {
			return &Error{Pos: sec.at(path), Path: path, Err: de.Err}
		}
		return err
	}
	sec.walk(root, path)
	d := newDecoder("", nil)
	d.section = sec
	return d.decode(root, v.Elem(), path, 0)
}

// section places the nodes of a section by their path in the document.
type section struct {
	doc   *Document // nil: no positions
	paths map[*yaml.Node]string
}

// walk records the document path of every node under n, which is at path.
func (s *section) walk(n *yaml.Node, path string) {
	s.paths[n] = path
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := childPath(path, n.Content[i].Value)
			s.paths[n.Content[i]] = p
			s.walk(n.Content[i+1], p)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			s.walk(c, itemPath(path, i))
		}
	}
}

func (s *section) pos(n *yaml.Node) Position { return s.at(s.paths[n]) }

func (s *section) at(path string) Position {
	if s.doc == nil {
		return Position{}
	}
	return s.doc.posOf(path)
}

// lenient reads a scalar that is not a string: integers, booleans and
// numbers are parsed from the scalar's text, whether it was written as a
// literal or as a string, with surrounding white space trimmed.
func (d *decoder) lenient(n *yaml.Node, v reflect.Value, path string) error {
	text := strings.TrimSpace(n.Value)
	var want string
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want = "an integer"
		if i, err := strconv.ParseInt(text, 10, v.Type().Bits()); err == nil {
			v.SetInt(i)
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a non-negative integer"
		if u, err := strconv.ParseUint(text, 10, v.Type().Bits()); err == nil {
			v.SetUint(u)
			return nil
		}
	case reflect.Bool:
		want = "true or false"
		if b, err := strconv.ParseBool(text); err == nil {
			v.SetBool(b)
			return nil
		}
	case reflect.Float32, reflect.Float64:
		want = "a number"
		if f, err := strconv.ParseFloat(text, v.Type().Bits()); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			v.SetFloat(f)
			return nil
		}
	default:
		return d.fail(n, path, fault.Internal, "cannot decode into %s", v.Type())
	}
	return d.fail(n, path, fault.Validation, "want %s, got %s", want, describe(n))
}
