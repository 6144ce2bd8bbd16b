package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corral-rt/corral/fault"
)

// REF 11.6.1
// --metrics-addr without a host listens on loopback; --record-turns
// defaults to 64 and may not be negative.
func TestServeFlagsMetricsAndRecordings(t *testing.T) {
	for _, c := range []struct {
		args    []string
		metrics string
		record  int
		bad     bool
	}{
		{args: []string{"d.yaml"}, metrics: "", record: 64},
		{args: []string{"d.yaml", "--metrics-addr", ":9464"}, metrics: "127.0.0.1:9464", record: 64},
		{args: []string{"d.yaml", "--metrics-addr", "9464"}, metrics: "127.0.0.1:9464", record: 64},
		{args: []string{"d.yaml", "--metrics-addr", "0.0.0.0:9464"}, metrics: "0.0.0.0:9464", record: 64},
		{args: []string{"d.yaml", "--metrics-addr", "[::1]:9464", "--record-turns", "0"}, metrics: "[::1]:9464", record: 0},
		{args: []string{"d.yaml", "--record-turns", "-1"}, bad: true},
		{args: []string{"d.yaml", "--record-turns", "many"}, bad: true},
	} {
		o, err := parseServeFlags(c.args)
		if c.bad {
			assert.True(t, fault.Is(err, fault.Validation), "%v: %v", c.args, err)
			continue
		}
		require.NoError(t, err, "%v", c.args)
		assert.Equal(t, c.metrics, o.metricsAddr, "%v", c.args)
		assert.Equal(t, c.record, o.recordTurns, "%v", c.args)
	}
}

// REF 11.1.8
// hash-key refuses a key that no request could present (a bearer key has
// no space, tab or control character in it), instead of printing a hash
// that admits no one.
func TestHashKeyRefusesUnusableKeys(t *testing.T) {
	for _, c := range []struct {
		in   string
		code int
	}{
		{"acme-key\n", exitOK},
		{"acme-key\r\n", exitOK},
		{"acme-key", exitOK},
		{"\n", exitBadInput},
		{"", exitBadInput},
		{"two words\n", exitBadInput},
		{" leading\n", exitBadInput},
		{"trailing \n", exitBadInput},
		{"tab\there\n", exitBadInput},
		{"bell\a\n", exitBadInput},
	} {
		var out, errOut strings.Builder
		code := hashKey(stdio{in: strings.NewReader(c.in), out: &out, err: &errOut})
		assert.Equal(t, c.code, code, "%q: %s", c.in, errOut.String())
		if c.code == exitOK {
			assert.Equal(t, "sha256:afacab3575137afa4e00d9cbcafcb14c9ae25f779d964eb0ea5b2c4eb5dfd163\n", out.String(), "%q", c.in)
		} else {
			assert.Empty(t, out.String(), "%q", c.in)
		}
	}
}

// REF 11.1.8
// hash-key warns on stderr about a key shorter than 16 characters (the
// server does not limit how many keys a client may try), and still
// prints its hash.
func TestHashKeyWarnsOfShortKeys(t *testing.T) {
	for _, c := range []struct {
		key  string
		warn bool
	}{{"acme-key", true}, {"0123456789abcde", true}, {"0123456789abcdef", false}, {strings.Repeat("k", 64), false}} {
		var out, errOut strings.Builder
		code := hashKey(stdio{in: strings.NewReader(c.key + "\n"), out: &out, err: &errOut})
		assert.Equal(t, exitOK, code, c.key)
		assert.True(t, strings.HasPrefix(out.String(), "sha256:"), c.key)
		if c.warn {
			assert.Contains(t, errOut.String(), "shorter than 16", c.key)
		} else {
			assert.Empty(t, errOut.String(), c.key)
		}
	}
}
