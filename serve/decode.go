package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/corral-rt/corral/fault"
)

// decodeJSON decodes a request body strictly into v: unknown fields, a
// second value and a body over the bound are Validation errors.
func decodeJSON(r io.Reader, v any, strict bool) error {
	dec := json.NewDecoder(r)
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fault.New(fault.Validation, "decode request", "the body is larger than %d bytes", mbe.Limit)
		}
		return fault.Wrap(fault.Validation, &bodyError{msg: jsonProblem(err), err: err}, "decode request", "the body is not the expected JSON")
	}
	if dec.More() {
		return fault.New(fault.Validation, "decode request", "the body holds more than one JSON value")
	}
	return nil
}

// bodyError is a decoder's error told in the client's terms; it keeps the
// decoder's error as its cause (io.EOF for an empty body).
type bodyError struct {
	msg string
	err error
}

func (e *bodyError) Error() string { return e.msg }
func (e *bodyError) Unwrap() error { return e.err }

// jsonProblem says what is wrong with a body in the client's terms: the
// JSON field and the JSON type it wants, or where the syntax breaks;
// never the server's Go types, which the decoder's own messages name.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the body"
		} else {
			field = strconv.Quote(field)
		}
		got := te.Value
		if v, _, _ := strings.Cut(got, " "); v != "" {
			got = v // "number 300" for a number out of range
		}
		switch got {
		case "object", "array":
			got = "an " + got
		case "bool":
			got = "a boolean"
		default:
			got = "a " + got
		}
		return fmt.Sprintf("%s must be %s, not %s", field, jsonKind(te.Type), got)
	case errors.As(err, &se):
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "unexpected end of the body"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another JSON type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another JSON type"
}
