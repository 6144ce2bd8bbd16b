package session_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// REF 10.2.1: StartConfig.RunID starts the turn with that run id (a replay
// reproduces the recorded one); a run id with surrounding space is
// refused before anything starts.
func TestStartWithRunID(t *testing.T) {
	t.Parallel()
	eng := agenttest.New()
	e := newEnv(t, eng)
	s := e.open(key("c")).Session()
	tr, err := s.StartWithConfig(context.Background(), agent.Request{Message: userMsg("hi")},
		session.StartConfig{RunID: "run-0123456789abcdef"})
	require.NoError(t, err)
	settle(t, tr)
	assert.Equal(t, "run-0123456789abcdef", tr.RunID())
	assert.Equal(t, "run-0123456789abcdef", eng.Runs()[0].Run.ID)

	_, err = s.StartWithConfig(context.Background(), agent.Request{Message: userMsg("hi")},
		session.StartConfig{RunID: " run-x"})
	isKind(t, err, fault.Validation)
}
