package resource_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fieldReply struct {
	Text   string `json:"text"`
	Chunks int    `json:"chunks,omitempty"`
	Delay  delay  `json:"delay,omitempty"`
}

// delay decodes itself, refusing anything but "1s".
type delay string

func (d *delay) UnmarshalJSON(b []byte) error {
	if string(b) != `"1s"` {
		return fault.New(fault.Validation, "decode duration", "%s is not a duration like \"5s\"", b)
	}
	*d = "1s"
	return nil
}

type fieldSettings struct {
	Replies []fieldReply          `json:"replies,omitempty"`
	Named   map[string]fieldReply `json:"named,omitempty"`
	Loop    bool                  `json:"loop,omitempty"`
	Ratio   float64               `json:"ratio,omitempty"`
	Max     *uint32               `json:"max,omitempty"`
}

// DecodeStrict names the value that does not fit by its path and says
// what was wanted and written, in the document's terms.
func TestDecodeStrictNamesThePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, path, key, msg string }{
		{`{"replies": [{"text": "a"}, {"chunks": "ten"}]}`, "replies[1].chunks", "", `want an integer, got "ten"`},
		{`{"named": {"k": {"chunks": true}}}`, "named.k.chunks", "", "want an integer, got true"},
		{`{"loop": "yes"}`, "loop", "", `want true or false, got "yes"`},
		{`{"replies": "x"}`, "replies", "", `want an array, got "x"`},
		{`{"replies": [3]}`, "replies[0]", "", "want an object, got 3"},
		{`{"max": -1}`, "max", "", "want a non-negative integer, got -1"},
		{`{"ratio": {}}`, "ratio", "", "want a number, got an object"},
		{`{"replies": [{"text": "a", "txt": "b"}]}`, "replies[0]", "txt", `unknown field "txt" (known: chunks, delay, text)`},
		{`{"Loop": true, "extra": 1}`, "", "extra", `unknown field "extra" (known: loop, max, named, ratio, replies)`},
		{`{"replies": [{"delay": "soon"}]}`, "replies[0].delay", "", `decode duration: "soon" is not a duration like "5s"`},
	} {
		err := resource.DecodeStrict([]byte(tc.in), &fieldSettings{})
		var fe *resource.FieldError
		require.ErrorAs(t, err, &fe, tc.in)
		assert.ErrorIs(t, err, fault.Validation, tc.in)
		assert.Equal(t, tc.path, fe.Path, tc.in)
		assert.Equal(t, tc.key, fe.Key, tc.in)
		assert.Equal(t, tc.msg, fe.Msg, tc.in)
		assert.NotContains(t, err.Error(), "json:", tc.in)
		assert.NotContains(t, err.Error(), "Go ", tc.in)
	}
	var s fieldSettings
	require.NoError(t, resource.DecodeStrict(nil, &s))
	require.NoError(t, resource.DecodeStrict([]byte(`{"replies": [{"text": "a", "delay": "1s"}], "loop": true}`), &s))
	assert.True(t, s.Loop)
	assert.ErrorContains(t, resource.DecodeStrict([]byte(`{} {}`), &s), "trailing data")
	assert.ErrorContains(t, resource.DecodeStrict([]byte(`{`), &s), "not valid JSON")
}

// LineOf finds the line of a path in YAML and in JSON, falls back to the
// nearest written ancestor, and gives 0 for text that does not parse.
func TestLineOf(t *testing.T) {
	t.Parallel()
	doc := []byte("name: g\nnodes:\n  - id: a\n  - id: b\n    config:\n      max: ten\n")
	assert.Equal(t, 6, resource.LineOf(doc, "nodes[1].config.max"))
	assert.Equal(t, 5, resource.LineOf(doc, "nodes[1].config.missing"))
	assert.Equal(t, 3, resource.LineOf(doc, "nodes[0]"))
	assert.Equal(t, 2, resource.LineOf(doc, "nodes[9]"))
	assert.Equal(t, 1, resource.LineOf(doc, ""))
	assert.Equal(t, 3, resource.LineOf([]byte("{\n\"a\": [\n{\"b\": 1}]}"), "a[0].b"))
	assert.Equal(t, 0, resource.LineOf([]byte("a: [\n"), "a"))
}

// LineWithin finds a line of a multi-line string: after a block scalar's
// indicator, on a plain scalar's own line, at the key otherwise.
func TestLineWithin(t *testing.T) {
	t.Parallel()
	doc := []byte("a:\n  source: |\n    one\n    two\n  plain: x\n  list: [1]\n")
	assert.Equal(t, 4, resource.LineWithin(doc, "a.source", 2))
	assert.Equal(t, 2, resource.LineWithin(doc, "a.source", 0))
	assert.Equal(t, 5, resource.LineWithin(doc, "a.plain", 1))
	assert.Equal(t, 6, resource.LineWithin(doc, "a.list", 3))
	assert.Equal(t, 1, resource.LineWithin(doc, "a.missing", 3))
}

// FuzzDecodeStrict: DecodeStrict never panics, fails exactly when strict
// encoding/json fails, and fails with a Validation FieldError.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{}`, `{"replies": [{"chunks": "ten"}]}`, `{"named": {"a": {"txt": 1}}}`, `{"loop": 1}`,
		`{"replies": [{"delay": 5}]}`, `{"max": 4294967296}`, `[`, `null`, `{"Replies": []}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want fieldSettings
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		wantErr := dec.Decode(&want)
		if wantErr == nil {
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				wantErr = errors.New("trailing")
			}
		}
		err := resource.DecodeStrict(data, &fieldSettings{})
		if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
			return // both decode as {}
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("DecodeStrict(%q) = %v, encoding/json: %v", data, err, wantErr)
		}
		if err != nil {
			var fe *resource.FieldError
			if !errors.As(err, &fe) || !fault.Is(err, fault.KindOr(err, fault.Validation)) {
				t.Fatalf("DecodeStrict(%q) = %v: not a FieldError", data, err)
			}
		}
		_ = resource.LineOf(data, "replies[0].chunks")
	})
}
