package deploy_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type sectionInner struct {
	Size  int           `json:"size"`
	Every time.Duration `json:"every"`
}

type sectionOuter struct {
	sectionInner
	Name string  `json:"name"`
	On   bool    `json:"on"`
	Rate float64 `json:"rate"`
	Size string  `json:"size_name"`
	List []int   `json:"list"`
}

// A section decodes by the document's rules: json tags, promoted fields of
// an embedded struct, defaults kept for absent and null keys, Go durations,
// and integers, booleans and numbers also written as (trimmed) strings.
func TestDecodeSection(t *testing.T) {
	t.Parallel()
	out := sectionOuter{sectionInner: sectionInner{Size: 7, Every: time.Minute}, Name: "default"}
	err := deploy.DecodeSection(nil, "runtime.x", json.RawMessage(
		`{"size":" 12 ","on":"true","rate":"0.5","name":null,"list":[1,"2"],"size_name":"s"}`), &out)
	require.NoError(t, err)
	assert.Equal(t, sectionOuter{sectionInner: sectionInner{Size: 12, Every: time.Minute}, Name: "default",
		On: true, Rate: 0.5, Size: "s", List: []int{1, 2}}, out)

	require.NoError(t, deploy.DecodeSection(nil, "runtime.x", json.RawMessage(`{"every":"90s"}`), &out))
	assert.Equal(t, 90*time.Second, out.Every)
}

// Errors are document errors about the path of the part, placed where the
// document writes it.
func TestDecodeSectionErrors(t *testing.T) {
	t.Parallel()
	doc, err := deploy.ParseWithConfig([]byte("version: v1\nruntime:\n  x:\n    size: 1\n    every: 1m\n    bad: 2\n"),
		deploy.ParseConfig{Filename: "d.yaml"})
	require.NoError(t, err)
	raw := json.RawMessage(`{"x":{"size":1,"every":"1m","bad":2}}`)
	var out struct {
		X sectionOuter `json:"x"`
	}
	err = deploy.DecodeSection(doc, "runtime", raw, &out)
	require.ErrorIs(t, err, fault.Validation)
	assert.EqualError(t, err, `d.yaml:6: runtime.x: unknown field "bad"`)

	for _, tc := range []struct{ raw, want string }{
		{`{"x":{"size":"lots"}}`, `d.yaml:4: runtime.x.size: want an integer, got the scalar "lots"`},
		{`{"x":{"every":"soon"}}`, `d.yaml:5: runtime.x.every: want a Go duration such as 90s or 10m, got the scalar "soon"`},
		{`{"x":{"on":"maybe"}}`, `d.yaml:3: runtime.x.on: want true or false, got the scalar "maybe"`},
		{`{"x":{"list":{}}}`, `d.yaml:3: runtime.x.list: want a sequence, got a mapping`},
		{`{"x":{"size":1,"size":2}}`, `d.yaml:4: runtime.x.size: key "size" is repeated`},
		{`{"x":`, `d.yaml:2: runtime: json: unexpected end of JSON input`},
	} {
		err := deploy.DecodeSection(doc, "runtime", json.RawMessage(tc.raw), &out)
		require.ErrorIs(t, err, fault.Validation, tc.raw)
		var de *deploy.Error
		require.True(t, errors.As(err, &de))
		assert.EqualError(t, err, tc.want, tc.raw)
	}
	err = deploy.DecodeSection(nil, "runtime", json.RawMessage(`{"x":{"bad":1}}`), &out)
	assert.EqualError(t, err, `runtime.x: unknown field "bad"`, "without a document there is no position")
	assert.ErrorIs(t, deploy.DecodeSection(nil, "runtime", raw, out), fault.Internal, "out must be a pointer")
}
