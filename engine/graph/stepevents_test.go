package graph

import (
	"strings"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
)

// The step subjects the engine composes are the ones the event package
// makes, for every kind of run, agent and node id.
func TestStepSubjectsMatchEventPackage(t *testing.T) {
	t.Parallel()
	for _, ids := range [][3]string{{"run-1", "agent", "n0"}, {"r.1*", "a.b>c", "n.x"}, {"", "", ""}} {
		doc := &Document{Name: "g", Entry: ids[2], Nodes: []Node{{ID: ids[2], Type: "noop"}}}
		e := &Engine{doc: doc}
		n := &builtNode{index: 0, id: ids[2]}
		r := &runState{e: e, run: agent.Run{ID: ids[0], AgentID: ids[1]}, runPart: event.SanitiseID(ids[0])}
		actor := event.Actor(ids[1], ids[2])
		assert.Equal(t, event.SubjectStepStart(ids[0], actor), r.stepSubject(stepStart, n))
		assert.Equal(t, event.SubjectStepComplete(ids[0], actor), r.stepSubject(stepComplete, n))
		assert.Equal(t, event.SubjectStepError(ids[0], actor), r.stepSubject(stepError, n))
	}
}

// Step subjects past event.MaxSubjectLen (a very long run id) are refused
// with the event package's error rather than published.
func TestStepSubjectsTooLong(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("r", event.MaxSubjectLen)
	for _, id := range []string{"run-1", long} {
		doc := &Document{Name: "g", Entry: "n", Nodes: []Node{{ID: "n", Type: "noop"}}}
		e := &Engine{doc: doc}
		r := &runState{e: e, run: agent.Run{ID: id, AgentID: "a"}, runPart: event.SanitiseID(id)}
		ev := r.headers.node(r, &builtNode{index: 0, id: "n"})
		if id == long {
			assert.ErrorIs(t, ev.err, event.ErrInvalidSubject)
			continue
		}
		assert.NoError(t, ev.err)
		assert.NoError(t, event.ValidateSubject(ev.start))
		assert.NoError(t, event.ValidateSubject(ev.complete))
	}
}
