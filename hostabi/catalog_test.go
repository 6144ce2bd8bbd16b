package hostabi_test

import (
	"slices"
	"testing"

	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 5.4: the host row of the script globals is the catalog:
// publish, emit, checkInterrupt, askUser, reportUsage and drainSteer, plus
// the deterministic clock, random and log of the design.
func TestCatalog(t *testing.T) {
	t.Parallel()
	want := []struct {
		name, capability string
		nonDeterministic bool
		lo, hi           int
	}{
		{hostabi.FuncAskUser, agent.CapAskUser, true, 1, 1},
		{hostabi.FuncCheckInterrupt, agent.CapInterrupt, true, 0, 0},
		{hostabi.FuncDelegate, agent.CapDelegate, true, 2, 3},
		{hostabi.FuncDrainSteer, agent.CapSteer, true, 0, 0},
		{hostabi.FuncEmit, agent.CapEmit, false, 1, 2},
		{hostabi.FuncLog, agent.CapLog, false, 2, 3},
		{hostabi.FuncNow, agent.CapClock, true, 0, 0},
		{hostabi.FuncPublish, agent.CapPublish, false, 1, 2},
		{hostabi.FuncRandom, agent.CapRandom, true, 0, 0},
		{hostabi.FuncReportUsage, agent.CapUsage, false, 1, 1},
	}
	cat := hostabi.Catalog()
	require.Len(t, cat, len(want))
	for i, w := range want {
		f := cat[i]
		assert.Equal(t, w.name, f.Name)
		assert.Equal(t, w.capability, f.Capability, f.Name)
		assert.Equal(t, w.nonDeterministic, f.NonDeterministic, f.Name)
		assert.Equal(t, f.Name == hostabi.FuncAskUser || f.Name == hostabi.FuncDelegate, f.Blocking, f.Name)
		lo, hi := f.Arity()
		assert.Equal(t, [2]int{w.lo, w.hi}, [2]int{lo, hi}, f.Name)
		assert.NotEmpty(t, f.Args, f.Name)
		assert.NotEmpty(t, f.Result, f.Name)
		assert.Contains(t, agent.CapabilityNames(), f.Capability, f.Name)
		got, ok := hostabi.Lookup(f.Name)
		require.True(t, ok, f.Name)
		assert.Equal(t, f.Name, got.Name)
	}
	names := hostabi.Names()
	assert.True(t, slices.IsSorted(names))
	assert.Len(t, names, len(want))
	for _, missing := range []string{"", "Now", "Delegate", "publish ", "fs"} {
		_, ok := hostabi.Lookup(missing)
		assert.False(t, ok, missing)
	}

	// The catalog is the caller's: changing it changes nothing else.
	cat[0].Name = "changed"
	assert.Equal(t, hostabi.FuncAskUser, hostabi.Catalog()[0].Name)
}

// REF 6.1.3: what a host yields is found with CapabilityFromHost,
// which Requires uses; a typed nil host yields nothing.
func TestCatalogRequires(t *testing.T) {
	t.Parallel()
	r := newRecorder()
	var typedNil *agent.HostFuncs
	for _, f := range hostabi.Catalog() {
		if f.Requires == nil {
			assert.Equal(t, hostabi.FuncDrainSteer, f.Name, "only drainSteer works on any host")
			continue
		}
		assert.True(t, f.Requires(r.fullHost()), f.Name)
		assert.False(t, f.Requires(nil), f.Name)
		assert.False(t, f.Requires(typedNil), f.Name)
	}
	now, _ := hostabi.Lookup(hostabi.FuncNow)
	assert.False(t, now.Requires(r.host(agent.CapRandom)))
	assert.True(t, now.Requires(r.host(agent.CapClock, agent.CapRandom)), "found by unwrapping")
}

func TestGranted(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{agent.CapClock, agent.CapEmit, agent.CapInterrupt, agent.CapLog, agent.CapRandom},
		hostabi.DefaultGrants())
	tests := []struct {
		name       string
		caps       []string
		capability string
		want       bool
	}{
		{"default emit", nil, agent.CapEmit, true},
		{"default clock", nil, agent.CapClock, true},
		{"default random", nil, agent.CapRandom, true},
		{"default log", nil, agent.CapLog, true},
		{"default interrupt", nil, agent.CapInterrupt, true},
		{"default refuses publish", nil, agent.CapPublish, false},
		{"default refuses steer", nil, agent.CapSteer, false},
		{"default refuses ask_user", nil, agent.CapAskUser, false},
		{"default refuses usage", nil, agent.CapUsage, false},
		{"default refuses delegate", nil, agent.CapDelegate, false},
		{"empty list grants nothing", []string{}, agent.CapEmit, false},
		{"listed set is exact", []string{agent.CapPublish}, agent.CapEmit, false},
		{"listed", []string{agent.CapPublish}, agent.CapPublish, true},
		{"no prefix match", []string{"pub"}, agent.CapPublish, false},
		{"case-sensitive", []string{"Publish"}, agent.CapPublish, false},
		{"delegate grants any target", []string{agent.CapDelegate}, "delegate:qa", true},
		{"one target", []string{"delegate:qa"}, "delegate:qa", true},
		{"other target", []string{"delegate:qa"}, "delegate:ops", false},
		{"target does not grant all", []string{"delegate:qa"}, agent.CapDelegate, false},
		{"empty target", []string{agent.CapDelegate}, "delegate:", false},
		{"empty capability", []string{agent.CapEmit}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, hostabi.Granted(agent.Run{Capabilities: tt.caps}, tt.capability))
		})
	}
}

// BlockingNames are exactly the catalog's blocking functions.
func TestBlockingNames(t *testing.T) {
	t.Parallel()
	assert.Equal(t, map[string]bool{hostabi.FuncAskUser: true, hostabi.FuncDelegate: true}, hostabi.BlockingNames())
}
