package serve_test

import (
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
		{"unknown field", "tenants:\n  acme:\n    keys: [" + hashA + "]\n    role: admin\n", "field role not found"},
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
