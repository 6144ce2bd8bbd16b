package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One attachment sees the runtime's lifecycle events in the order they
// were published, across many reloads that replace the document's bus
// (and reloads that fail) while agents are registered and removed beside
// them: per attempt, its started before its one completed or failed; per
// agent, registered and removed alternating as they were made.
func TestLifecycleEventsInOrderAcrossReloads(t *testing.T) {
	t.Parallel()
	rt, _ := buildLab(t, newLab(), nil, labDoc("", ""))
	rec := attach(t, rt, "runtime.>")
	docs := []string{
		strings.Replace(labDoc("\n  events_b: {kind: event.Bus, impl: memory}", ""), "event_bus: events\n", "event_bus: events_b\n", 1), // another bus
		labDoc("", ""),
		strings.Replace(labDoc("", ""), "event_bus: events", "event_bus: events\n  bogus: 1", 1), // fails
	}
	const rounds = 60
	want := 0
	var wg sync.WaitGroup
	agentChanges := 0
	wg.Add(1)
	go func() { // agents come and go beside the reloads
		defer wg.Done()
		for range rounds / 2 {
			if _, err := rt.RegisterAgent(context.Background(), "x", labDef("x", false)); err == nil {
				agentChanges++
				if rt.UnregisterAgent(context.Background(), "x") == nil {
					agentChanges++
				}
			}
		}
	}()
	for i := range rounds {
		_, err := rt.Reload(context.Background(), parse(t, docs[i%len(docs)]))
		if i%len(docs) == len(docs)-1 {
			require.Error(t, err)
		} else {
			require.NoError(t, err)
		}
		want += 2
	}
	wg.Wait()
	envs := rec.waitFor(t, want+agentChanges)
	started := map[uint64]int{}
	ended := map[uint64]int{}
	var agentEvents []string
	for i, env := range envs {
		switch {
		case env.Subject == event.SubjectRebuildStarted():
			started[generation(t, env)] = i + 1
		case env.Subject == event.SubjectRebuildCompleted(), env.Subject == event.SubjectRebuildFailed():
			id := generation(t, env)
			assert.NotZero(t, started[id], "generation %d ended before it started: %v", id, subjects(envs))
			assert.Zero(t, ended[id], "generation %d ended twice", id)
			ended[id] = i + 1
		case strings.HasPrefix(env.Subject, "runtime.agent.x."):
			agentEvents = append(agentEvents, env.Subject)
		}
	}
	assert.Len(t, started, rounds)
	assert.Len(t, ended, rounds)
	for i, s := range agentEvents {
		want := event.SubjectAgentRegistered("x")
		if i%2 == 1 {
			want = event.SubjectAgentRemoved("x")
		}
		require.Equal(t, want, s, "agent event %d of %v", i, agentEvents)
	}
}

func generation(t *testing.T, env event.Envelope) uint64 {
	t.Helper()
	var p event.RebuildPayload
	require.NoError(t, json.Unmarshal(env.Payload, &p))
	return p.GenerationID
}

func subjects(envs []event.Envelope) []string {
	out := make([]string, len(envs))
	for i, e := range envs {
		out[i] = e.Subject
	}
	return out
}
