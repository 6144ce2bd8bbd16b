package sandboxtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func events(res Result) []event.Envelope { return res.Host.(*Host).Events() }

func capabilityGranted(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "emit", Grants: []string{agent.CapEmit}})
	require.NoError(t, res.Err)
	evs := events(res)
	require.Len(t, evs, 1)
	assert.Equal(t, event.SubjectStreamDelta(RunID, event.Actor("agent", "node")), evs[0].Subject)
	assert.Contains(t, string(evs[0].Payload), "hello")
	assert.Equal(t, "node", evs[0].Headers[event.HeaderNodeID])
}

func capabilityRefused(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "call_refused", Grants: []string{agent.CapEmit}})
	require.NoError(t, res.Err)
	assert.Equal(t, fault.PolicyDenied.String(), Var(t, res, "code"))
	assert.Contains(t, Var(t, res, "message"), agent.CapPublish)
	assert.NotContains(t, res.Board.Vars, "reached")
	assert.Empty(t, events(res), "a refused call must not reach the host")
}

func capabilityRefusedUncaught(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "call_refused_uncaught", Node: "writer", Grants: []string{}})
	RequireKind(t, res.Err, fault.PolicyDenied)
	assert.Contains(t, res.Err.Error(), "writer")
	assert.Contains(t, res.Err.Error(), hostabi.FuncPublish)
	assert.Empty(t, events(res))
}

func capabilityMissing(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "now_caught", Host: agent.NoopHost{}, Grants: []string{agent.CapClock}})
	require.NoError(t, res.Err)
	assert.Equal(t, fault.PolicyDenied.String(), Var(t, res, "code"))
	assert.NotContains(t, res.Board.Vars, "now")
}

func publishWithoutBus(t *testing.T, env *Env) {
	h := NewHost(1)
	h.SetEventBus(false)
	res := env.Invoke(t, Call{Program: "call_refused", Host: h, Grants: []string{agent.CapPublish}})
	require.NoError(t, res.Err)
	assert.Equal(t, fault.PolicyDenied.String(), Var(t, res, "code"))
	assert.Contains(t, Var(t, res, "message"), hostabi.FuncPublish)
	assert.Contains(t, Var(t, res, "message"), "does not provide")
	assert.NotContains(t, res.Board.Vars, "reached")
	assert.Empty(t, h.Events(), "a refused publish must not reach the host")

	h = NewHost(1)
	h.SetEventBus(false)
	res = env.Invoke(t, Call{Program: "call_refused_uncaught", Node: "writer", Host: h, Grants: []string{agent.CapPublish}})
	RequireKind(t, res.Err, fault.PolicyDenied)
	assert.Contains(t, res.Err.Error(), "writer")
	assert.Contains(t, res.Err.Error(), hostabi.FuncPublish)
	assert.Empty(t, h.Events())
}

func badArguments(t *testing.T, env *Env) {
	grants := []string{agent.CapEmit, agent.CapLog, agent.CapPublish, agent.CapUsage}
	res := env.Invoke(t, Call{Program: "bad_args", Grants: grants})
	require.NoError(t, res.Err)
	codes, ok := Var(t, res, "codes").(map[string]any)
	require.True(t, ok)
	require.NotEmpty(t, codes)
	for name, code := range codes {
		assert.Equal(t, fault.Validation.String(), code, "%s", name)
	}
	assert.Empty(t, events(res), "no malformed call may publish")
}

func everyFunctionBound(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "host_names", Grants: []string{}})
	require.NoError(t, res.Err)
	var want []any
	for _, n := range hostabi.Names() {
		want = append(want, n)
	}
	assert.Equal(t, want, Var(t, res, "names"))
}

func publishConfined(t *testing.T, env *Env) {
	res := env.Invoke(t, Call{Program: "publish", Grants: []string{agent.CapPublish}})
	require.NoError(t, res.Err)
	evs := events(res)
	require.Len(t, evs, 2)
	prefix := event.SubjectPrefixRun + RunID + "." + hostabi.CustomSegment + "."
	for _, e := range evs {
		assert.True(t, strings.HasPrefix(e.Subject, prefix), "subject %q escapes %q", e.Subject, prefix)
	}
	assert.Equal(t, prefix+"greeting", evs[0].Subject)
}

func steerNode(t *testing.T, env *Env) {
	h := NewHost(1)
	h.Steer(message.NewTextMessage(message.RoleUser, "first"), message.NewTextMessage(message.RoleUser, "second"))
	res := env.Invoke(t, Call{Program: "steer", Host: h, Grants: []string{agent.CapSteer}})
	require.NoError(t, res.Err)
	main := res.Board.Channel(agent.MainChannel)
	require.Len(t, main, 2)
	assert.Equal(t, "first", main[0].Text())
	assert.Equal(t, "second", main[1].Text())
	idle := env.Invoke(t, Call{Program: "steer", Host: h, Board: res.Board, Grants: []string{agent.CapSteer}})
	require.NoError(t, idle.Err)
	assert.Len(t, idle.Board.Channel(agent.MainChannel), 2, "an idle round appends nothing")
	entries := res.Journal.Entries()
	require.Len(t, entries, 1)
	assert.Equal(t, hostabi.FuncDrainSteer, entries[0].Func)
	var journaled []json.RawMessage
	require.NoError(t, json.Unmarshal(entries[0].Result, &journaled))
	assert.Len(t, journaled, 2, "drainSteer is journaled with its result")
}
