package agent_test

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCapabilityNames(t *testing.T) {
	t.Parallel()
	names := agent.CapabilityNames()
	assert.True(t, slices.IsSorted(names), "names are sorted: %v", names)
	assert.Len(t, slices.Compact(slices.Clone(names)), len(names), "names are unique")
	assert.ElementsMatch(t, []string{agent.CapSteer, agent.CapPublish, agent.CapEmit, agent.CapInterrupt, agent.CapAskUser,
		agent.CapUsage, agent.CapDelegate, agent.CapClock, agent.CapRandom, agent.CapLog}, names)

	// The caller gets its own slice.
	names[0] = "changed"
	assert.Equal(t, agent.CapAskUser, agent.CapabilityNames()[0])
}

func TestValidateCapabilityName(t *testing.T) {
	t.Parallel()
	for _, n := range agent.CapabilityNames() {
		assert.NoError(t, agent.ValidateCapabilityName(n), n)
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"delegate:researcher", true},
		{"delegate:team/reviewer", true},
		{"delegate:a:b", true},
		{"delegate:é", true},
		{"", false},
		{"steer ", false},
		{" steer", false},
		{"STEER", false},
		{"askUser", false},
		{"delegate:", false},
		{"delegate: ", false},
		{"delegate: researcher", false},
		{"delegate:researcher ", false},
		{"delegate:\tresearcher", false},
		{"delegate:\xff", false},
		{"delegate", true},
		{"delegates:x", false},
		{"Delegate:x", false},
		{"log:debug", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := agent.ValidateCapabilityName(tt.name)
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, fault.Validation)
			assert.True(t, strings.HasPrefix(err.Error(), "agent: capabilities: "), err.Error())
		})
	}
}

// FuzzValidateCapabilityName checks that ValidateCapabilityName never
// panics, accepts exactly the known names and well-formed delegate targets,
// and reports every refusal as a Validation error.
func FuzzValidateCapabilityName(f *testing.F) {
	for _, n := range agent.CapabilityNames() {
		f.Add(n)
	}
	for _, s := range []string{"", "delegate:", "delegate:x", "delegate: x", "delegate:\xff", "x", "steer\x00", "delegate:\u00a0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := agent.ValidateCapabilityName(name)
		target, isDelegate := strings.CutPrefix(name, "delegate:")
		want := slices.Contains(agent.CapabilityNames(), name) ||
			isDelegate && target != "" && strings.TrimSpace(target) == target && utf8.ValidString(target)
		if want != (err == nil) {
			t.Fatalf("ValidateCapabilityName(%q) = %v, want accepted=%v", name, err, want)
		}
		if err != nil && !fault.Is(err, fault.Validation) {
			t.Fatalf("ValidateCapabilityName(%q): error %v is not a Validation error", name, err)
		}
	})
}
