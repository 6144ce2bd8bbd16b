package graph

import (
	"fmt"
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
		r := &runState{e: e, run: agent.Run{ID: ids[0], AgentID: ids[1]}, cache: runCaches{runPart: event.SanitiseID(ids[0])}}
		actor := event.Actor(ids[1], ids[2])
		assert.Equal(t, event.SubjectStepStart(ids[0], actor), r.stepSubject(stepStart, n))
		assert.Equal(t, event.SubjectStepComplete(ids[0], actor), r.stepSubject(stepComplete, n))
		assert.Equal(t, event.SubjectStepError(ids[0], actor), r.stepSubject(stepError, n))
	}
}

// Step subjects past event.MaxSubjectLen (a very long run id) are refused
// with the event package's error rather than published, each on its own:
// a run id that makes the complete subject too long but not the start
// subject (three bytes shorter) refuses only the complete subject.
func TestStepSubjectsTooLong(t *testing.T) {
	t.Parallel()
	doc := &Document{Name: "g", Entry: "n", Nodes: []Node{{ID: "n", Type: "noop"}}}
	e := &Engine{doc: doc}
	base := len(event.SubjectStepComplete("r", event.Actor("a", "n"))) - 1 // without the run id
	for _, tc := range []struct {
		runLen              int
		startOK, completeOK bool
	}{
		{5, true, true},
		{event.MaxSubjectLen - base + 1, true, false},
		{event.MaxSubjectLen, false, false},
	} {
		id := strings.Repeat("r", tc.runLen)
		r := &runState{e: e, run: agent.Run{ID: id, AgentID: "a"}, cache: runCaches{runPart: event.SanitiseID(id)}}
		ev := r.cache.headers.node(r, &builtNode{index: 0, id: "n"})
		assert.Equal(t, tc.startOK, event.ValidateSubject(ev.start) == nil, "run id of %d bytes", tc.runLen)
		assert.Equal(t, tc.completeOK, event.ValidateSubject(ev.complete) == nil, "run id of %d bytes", tc.runLen)
		if tc.startOK {
			assert.NoError(t, ev.startErr)
		} else {
			assert.ErrorIs(t, ev.startErr, event.ErrInvalidSubject)
		}
		if tc.completeOK {
			assert.NoError(t, ev.completeErr)
		} else {
			assert.ErrorIs(t, ev.completeErr, event.ErrInvalidSubject)
		}
	}
}

// The subjects of every node are right whether they are made for all the
// nodes of a small graph at once or node by node in a larger one, in
// whatever order the nodes run.
func TestStepSubjectsOfManyNodes(t *testing.T) {
	t.Parallel()
	for _, size := range []int{3, smallGraph, smallGraph + 5} {
		doc := &Document{Name: "g", Entry: "n0"}
		for i := range size {
			doc.Nodes = append(doc.Nodes, Node{ID: fmt.Sprintf("n.%d", i), Type: "noop"})
		}
		e := &Engine{doc: doc}
		r := &runState{e: e, run: agent.Run{ID: "run.1", AgentID: "a*b"}, cache: runCaches{runPart: event.SanitiseID("run.1")}}
		for _, i := range []int{size - 1, 0, size / 2, 1} {
			n := &builtNode{index: i, id: doc.Nodes[i].ID}
			actor := event.Actor("a*b", n.id)
			assert.Equal(t, event.SubjectStepStart("run.1", actor), r.stepSubject(stepStart, n), "%d nodes, node %d", size, i)
			assert.Equal(t, event.SubjectStepComplete("run.1", actor), r.stepSubject(stepComplete, n), "%d nodes, node %d", size, i)
		}
	}
}
