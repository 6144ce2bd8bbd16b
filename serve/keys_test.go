package serve_test

import (
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/serve"
)

const hashA = "sha256:afacab3575137afa4e00d9cbcafcb14c9ae25f779d964eb0ea5b2c4eb5dfd163" // acme-key

// REF 11.1.1
func TestParseKeys(t *testing.T) {
	t.Parallel()
	k, err := serve.LoadKeys("testdata/keys.yaml")
	require.NoError(t, err)
	for key, want := range map[string]string{acmeKey: "acme", acmeKey2: "acme", bravoKey: "bravo", meterKey: "meter"} {
		got, ok := k.Tenant(key)
		assert.True(t, ok, key)
		assert.Equal(t, want, got, key)
	}
	for _, bad := range []string{"", "acme", "acme-key ", hashA} {
		_, ok := k.Tenant(bad)
		assert.False(t, ok, "%q is no key", bad)
	}
	assert.Equal(t, []string{"acme", "bravo", "meter"}, k.Tenants())
	assert.Equal(t, hashA, serve.HashKey("acme-key"))
}

// REF 11.1.2
func TestParseKeysErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, want string }{
		{"plain key", "tenants:\n  acme:\n    keys: [acme-key]\n", `keys.yaml:2: tenants.acme.keys[0]: a key is stored as "sha256:"`},
		{"unknown field", "tenants:\n  acme:\n    keys: [" + hashA + "]\n    role: admin\n", `keys.yaml:4: unknown field "role"`},
		{"no key", "tenants:\n  acme: {keys: []}\n", "keys.yaml:2: tenants.acme.keys: the tenant has no key"},
		{"no tenant", "tenants: {}\n", "no tenant is declared"},
		{"twice", "tenants:\n  a: {keys: [" + hashA + "]}\n  b: {keys: [" + hashA + "]}\n", `keys.yaml:3: tenants.b.keys[0]: the key is listed already (tenant "a")`},
		{"not hex", "tenants:\n  a: {keys: [sha256:" + string(make([]byte, 0)) + "zz" + hashA[9:71] + "]}\n", "the hash is not hex"},
		{"not yaml", "tenants: [\n", "keys.yaml"},
	} {
		_, err := serve.ParseKeys("keys.yaml", []byte(tc.doc))
		require.Error(t, err, tc.name)
		assert.True(t, fault.Is(err, fault.Validation), tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
	var zero *serve.Keys
	_, ok := zero.Tenant(acmeKey)
	assert.False(t, ok, "no keys admit no one")
}

// REF 11.1.7
// A keys file that another user may write is refused (another user could
// add a key of their own), as is the stored hash of the empty key, which
// no request can present.
func TestKeysFileEdgeCases(t *testing.T) {
	t.Parallel()
	const emptyKeyHash = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	_, err := serve.ParseKeys("keys.yaml", []byte("tenants:\n  acme: {keys: ["+hashA+", "+emptyKeyHash+"]}\n"))
	require.Error(t, err)
	assert.True(t, fault.Is(err, fault.Validation))
	assert.Contains(t, err.Error(), "keys.yaml:2: tenants.acme.keys[1]: the hash of the empty key")

	if goruntime.GOOS == "windows" {
		return // no Unix modes
	}
	doc := []byte("tenants:\n  acme: {keys: [" + hashA + "]}\n")
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o600, true}, {0o644, true}, {0o640, true}, {0o664, false}, {0o666, false}, {0o602, false}} {
		path := filepath.Join(t.TempDir(), "keys.yaml")
		require.NoError(t, os.WriteFile(path, doc, 0o600))
		require.NoError(t, os.Chmod(path, c.mode))
		_, err := serve.LoadKeys(path)
		if c.ok {
			assert.NoError(t, err, "%o", c.mode)
			continue
		}
		require.Error(t, err, "%o", c.mode)
		assert.True(t, fault.Is(err, fault.Forbidden), "%o: %v", c.mode, err)
		assert.Contains(t, err.Error(), path, "%o", c.mode)
	}
}

// REF 11.1.2
// A keys file of the wrong shape is refused naming the file, the line
// and what is expected there, never the server's Go types.
func TestParseKeysShapeErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ doc, want string }{
		{"a: 1\n", `keys.yaml:1: unknown field "a"`},
		{"tenants: 5\n", "keys.yaml:1: a number where a mapping is expected"},
		{"tenants:\n  a: 7\n", "keys.yaml:2: a number where a mapping is expected"},
		{"tenants:\n  a: {keys: x}\n", "keys.yaml:2: a string where a list is expected"},
		{"tenants:\n  a: {keys: [[1]]}\n", "keys.yaml:2: a list where a string is expected"},
		{"tenants:\n  a: {keys: [" + hashA + "], role: x}\n", `keys.yaml:2: unknown field "role"`},
	} {
		_, err := serve.ParseKeys("keys.yaml", []byte(c.doc))
		require.Error(t, err, c.doc)
		assert.True(t, fault.Is(err, fault.Validation), c.doc)
		assert.Contains(t, err.Error(), c.want, c.doc)
		for _, leak := range []string{"serve.", "keysFile", "keysTenant", "[]string", "map["} {
			assert.NotContains(t, err.Error(), leak, c.doc)
		}
	}
}
