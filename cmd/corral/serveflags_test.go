package main

import (
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
