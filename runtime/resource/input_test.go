package resource_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

type settings struct {
	Name  string `json:"name"`
	Limit int    `json:"limit,omitempty"`
}

func TestDecodeSettings(t *testing.T) {
	// REF 3.6.3
	t.Parallel()
	for _, empty := range []string{"", "  ", "null", " null\n", "{}"} {
		var s settings
		require.NoError(t, resource.DecodeSettings([]byte(empty), &s), "%q decodes as {}", empty)
		assert.Zero(t, s)
		m, err := resource.DecodeTyped[map[string]any]([]byte(empty))
		require.NoError(t, err)
		assert.Empty(t, m)
	}
	s, err := resource.DecodeTyped[settings]([]byte(`{"name":"a","limit":3}`))
	require.NoError(t, err)
	assert.Equal(t, settings{Name: "a", Limit: 3}, s)

	for _, bad := range []string{`{"name":"a","nmae":"b"}`, `{"name":1}`, `{"name":"a"} {}`, `{"name":"a"}}`, `[1]`, `{`} {
		_, err := resource.DecodeTyped[settings]([]byte(bad))
		assert.ErrorIs(t, err, fault.Validation, bad)
	}
	_, err = resource.DecodeTyped[settings]([]byte(`{"name":"a","extra":true}`))
	assert.ErrorContains(t, err, `unknown field "extra"`)
}

func TestInputDeps(t *testing.T) {
	// REF 3.6.4
	// REF 3.6.5
	t.Parallel()
	in := resource.Input{Deps: map[string]any{
		"bus": "B", "tools.zeta": "Z", "tools": "T", "tools.alpha": "A", "toolsx": "X",
	}}
	v, ok := in.Dep("bus")
	assert.True(t, ok)
	assert.Equal(t, "B", v)
	_, ok = in.Dep("nope")
	assert.False(t, ok)
	many := in.DepsMany("tools")
	require.Len(t, many, 3)
	assert.Equal(t, []resource.NamedDep{{Key: "tools", Value: "T"}, {Key: "tools.alpha", Value: "A"}, {Key: "tools.zeta", Value: "Z"}}, many)
	assert.Equal(t, []string{"", "alpha", "zeta"}, []string{many[0].Suffix(), many[1].Suffix(), many[2].Suffix()})
	assert.Empty(t, in.DepsMany("cache"))

	n, err := resource.As[string]("bus", v)
	require.NoError(t, err)
	assert.Equal(t, "B", n)
	_, err = resource.As[io.Closer]("bus", v)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, `dep "bus": string is not a io.Closer`)
}

// mapLoader serves references from a map and expands ${x} to X.
type mapLoader map[string]string

func (m mapLoader) Load(_ context.Context, src resource.Source) ([]byte, error) {
	if s, ok := m[src.String()]; ok {
		return []byte(s), nil
	}
	return nil, fault.New(fault.NotFound, "load", "%s", src)
}

func (mapLoader) Expand(s string) (string, error) {
	if strings.Contains(s, "${bad}") {
		return "", fault.New(fault.Validation, "expand", "bad")
	}
	return strings.ReplaceAll(s, "${x}", "X"), nil
}

var _ resource.Loader = mapLoader{}

func TestInputResolve(t *testing.T) {
	// REF 3.6.5
	t.Parallel()
	ctx := context.Background()
	l := mapLoader{"file:g.yaml": "entry: start\nnodes: [a]\n", "embed:s.js": "return 1", "file:bad.yaml": "a: [\n"}
	in := resource.Input{Loader: l, Settings: json.RawMessage(`{"file":"g.yaml"}`)}

	got, err := in.Resolve(ctx, resource.Source{Embed: "s.js"})
	require.NoError(t, err)
	assert.Equal(t, "return 1", string(got))
	_, err = in.Resolve(ctx, resource.Source{File: "none"})
	assert.ErrorIs(t, err, fault.NotFound)

	doc, err := in.ResolveSettings(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `{"entry":"start","nodes":["a"]}`, string(doc))
	inline := resource.Input{Loader: l, Settings: json.RawMessage(`{"entry":"x"}`)}
	doc, err = inline.ResolveSettings(ctx)
	require.NoError(t, err)
	assert.JSONEq(t, `{"entry":"x"}`, string(doc))
	_, err = in.ResolveDocument(ctx, json.RawMessage(`{"file":"bad.yaml"}`))
	assert.ErrorIs(t, err, fault.Validation)

	text, err := in.ResolveText(ctx, json.RawMessage(`{"embed":"s.js"}`))
	require.NoError(t, err)
	assert.Equal(t, "return 1", text)
	text, err = in.ResolveText(ctx, json.RawMessage(`"inline"`))
	require.NoError(t, err)
	assert.Equal(t, "inline", text)
	_, err = in.ResolveText(ctx, json.RawMessage(`3`))
	assert.ErrorIs(t, err, fault.Validation)

	_, err = resource.Input{}.Resolve(ctx, resource.Source{File: "x"})
	assert.ErrorIs(t, err, fault.NotAvailable, "no loader outside a document")

	exp := resource.Input{Loader: l, Settings: json.RawMessage(`{"a":"${x}","b":["${x}",1,true,null],"${x}":{"c":"${x}"}}`)}
	out, err := exp.ExpandSettings()
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":"X","b":["X",1,true,null],"${x}":{"c":"X"}}`, string(out), "values are expanded, keys are not")
	_, err = resource.Input{Loader: l, Settings: json.RawMessage(`{"a":"${bad}"}`)}.ExpandSettings()
	assert.ErrorIs(t, err, fault.Validation)
	out, err = resource.Input{Settings: json.RawMessage(`{"a":"${x}"}`)}.ExpandSettings()
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":"${x}"}`, string(out), "no loader, no expansion")
}

func TestSourceOf(t *testing.T) {
	// REF 3.2.3
	t.Parallel()
	cases := []struct {
		raw  string
		want resource.Source
		ok   bool
	}{
		{`{"file":"a.yaml"}`, resource.Source{File: "a.yaml"}, true},
		{` {"embed": "graphs/qa.yaml"} `, resource.Source{Embed: "graphs/qa.yaml"}, true},
		{`{"file":"a.yaml","note":"x"}`, resource.Source{}, false},
		{`{"file":""}`, resource.Source{}, false},
		{`{"file":3}`, resource.Source{}, false},
		{`{"path":"a.yaml"}`, resource.Source{}, false},
		{`"a.yaml"`, resource.Source{}, false},
		{`{}`, resource.Source{}, false},
		{``, resource.Source{}, false},
		{`{"file":`, resource.Source{}, false},
	}
	for _, tc := range cases {
		got, ok := resource.SourceOf(json.RawMessage(tc.raw))
		assert.Equal(t, tc.ok, ok, tc.raw)
		assert.Equal(t, tc.want, got, tc.raw)
	}
	assert.Equal(t, "file:a", resource.Source{File: "a"}.String())
	assert.Equal(t, "embed:b", resource.Source{Embed: "b"}.String())
}

func TestExpandJSON(t *testing.T) {
	// REF 3.2.4
	t.Parallel()
	upper := func(s string) (string, error) { return strings.ToUpper(s), nil }
	out, err := resource.ExpandJSON(json.RawMessage(`{"k":["a",{"b":"c"}],"n":12345678901234567890,"x":"<&>"}`), upper)
	require.NoError(t, err)
	assert.Equal(t, `{"k":["A",{"b":"C"}],"n":12345678901234567890,"x":"<&>"}`, string(out), "numbers keep their text")
	boom := errors.New("boom")
	_, err = resource.ExpandJSON(json.RawMessage(`{"a":"x"}`), func(string) (string, error) { return "", boom })
	assert.ErrorIs(t, err, boom)
	_, err = resource.ExpandJSON(json.RawMessage(`{"a":`), upper)
	assert.ErrorIs(t, err, fault.Validation)
	_, err = resource.ExpandJSON(json.RawMessage(`{} {}`), upper)
	assert.ErrorIs(t, err, fault.Validation)
}

// Of several strings that fail, the one under the first key in order is
// reported, every time.
func TestExpandJSONReportsTheFirstKey(t *testing.T) {
	t.Parallel()
	refuse := func(s string) (string, error) { return "", errors.New("unset: " + s) }
	for range 20 {
		_, err := resource.ExpandJSON(json.RawMessage(`{"z":"z","a":{"y":"y","b":"b"},"c":"c"}`), refuse)
		require.Error(t, err)
		assert.Equal(t, "unset: b", err.Error())
	}
}

func TestYAMLToJSON(t *testing.T) {
	// REF 3.2.3
	t.Parallel()
	cases := []struct {
		in, want string
		fails    bool
	}{
		{"a: 1\nb: [x, 2.5, true, null]\nc: {d: e}\n", `{"a":1,"b":["x",2.5,true,null],"c":{"d":"e"}}`, false},
		{`{"json": "works", "n": 1}`, `{"json":"works","n":1}`, false},
		{"", "null", false},
		{"# only a comment\n", "null", false},
		{"- 1\n- two\n", `[1,"two"]`, false},
		{"when: 2024-01-02\n", `{"when":"2024-01-02"}`, false},
		{"1: one\ntrue: yes\n", `{"1":"one","true":"yes"}`, false},
		{"big: 18446744073709551615\n", `{"big":18446744073709551615}`, false},
		{"script: a < b && c > d\n", `{"script":"a < b && c > d"}`, false},
		{"a: .nan\n", "", true},
		{"a: .inf\n", "", true},
		{"a: &x 1\nb: *x\n", "", true},
		{"a: {<<: {b: 1}}\n", "", true},
		{"? [a]\n: b\n", "", true},
		{"a: 1\na: 2\n", "", true},
		{"a: 1\n---\nb: 2\n", "", true},
		{"a: [\n", "", true},
	}
	for _, tc := range cases {
		got, err := resource.YAMLToJSON([]byte(tc.in))
		if tc.fails {
			assert.ErrorIs(t, err, fault.Validation, "%q", tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, string(got), tc.in)
	}
	_, err := resource.YAMLToJSON([]byte("a:\n  b: .nan\n"))
	assert.ErrorContains(t, err, "line 2", "errors name the line")
}

func TestNodeValueDepth(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	var n yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(deep), &n))
	_, err := resource.NodeValue(&n)
	assert.ErrorIs(t, err, fault.Validation)
	assert.ErrorContains(t, err, "deeper than 256")
}

// value is a resource value that implements every optional interface.
type value struct{ wired, bound bool }

func (v *value) Close() error                         { return nil }
func (v *value) Wire(context.Context) error           { v.wired = true; return nil }
func (v *value) ResolveItem(item string) (any, error) { return item, nil }
func (v *value) BindDeployment(any) error             { v.bound = true; return nil }

var (
	_ io.Closer                 = (*value)(nil)
	_ resource.Wireable         = (*value)(nil)
	_ resource.ItemResolver     = (*value)(nil)
	_ resource.DeploymentBinder = (*value)(nil)
)

func TestOptionalInterfaces(t *testing.T) {
	// REF 3.6.7
	t.Parallel()
	var v any = &value{}
	_, ok := v.(io.Closer)
	assert.True(t, ok)
	w, ok := v.(resource.Wireable)
	require.True(t, ok)
	require.NoError(t, w.Wire(context.Background()))
	ir, ok := v.(resource.ItemResolver)
	require.True(t, ok)
	item, err := ir.ResolveItem("x")
	require.NoError(t, err)
	assert.Equal(t, "x", item)
	b, ok := v.(resource.DeploymentBinder)
	require.True(t, ok)
	require.NoError(t, b.BindDeployment(nil))
	assert.True(t, v.(*value).wired && v.(*value).bound)
}
