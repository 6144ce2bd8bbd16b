package local_test

import (
	"context"
	"errors"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cancelAt returns a ctx that is cancelled once g is reached.
func cancelAt(t *testing.T, g *agenttest.Gate) context.Context {
	ctx, cancel := context.WithCancel(timeout(t))
	go func() {
		select {
		case <-g.Reached():
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx
}

// REF 6.2.5: with a persistent provider, a retry whose request has
// the same role, text and inputs as the parked run resumes that run (same
// run id, from its checkpoint); another request starts afresh.
func TestResumeOnRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{resume: true, provider: fixedProvider{id: "shared", persistent: true}})
	var gate *agenttest.Gate
	eng := agenttest.NewScript(func(_ int, run agent.Run) []agenttest.Step {
		switch {
		case run.ResumeFrom != nil:
			// A resumed run starts at the step after the checkpoint.
			return []agenttest.Step{agenttest.Checkpoint(), agenttest.Say("resumed")}
		case gate != nil:
			return []agenttest.Step{agenttest.Checkpoint(), agenttest.WaitGate(gate)}
		}
		return []agenttest.Step{agenttest.Say("fresh")}
	})
	e.agents.put("worker", resumable{Engine: eng})

	gate = agenttest.NewGate()
	first := e.delegate(t, cancelAt(t, gate), "worker", "task")
	require.Equal(t, delegation.StatusCanceled, first.Status)

	gate = nil
	second := e.delegate(t, timeout(t), "worker", "task")
	assert.Equal(t, delegation.StatusSucceeded, second.Status)
	assert.Equal(t, "resumed", agenttest.ReplyText(second.Output))
	assert.Equal(t, first.RunID, second.RunID, "the parked run resumed under its run id")

	gate = agenttest.NewGate()
	third := e.delegate(t, cancelAt(t, gate), "worker", "task")
	require.Equal(t, delegation.StatusCanceled, third.Status)
	gate = nil
	fourth := e.delegate(t, timeout(t), "worker", "another task")
	assert.Equal(t, "fresh", agenttest.ReplyText(fourth.Output), "a different request starts afresh")
	assert.NotEqual(t, third.RunID, fourth.RunID)
}

// REF 6.2.5: a resume that fails falls back to a fresh start; a
// provider that is not persistent never resumes.
func TestResumeFallback(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envConfig{resume: true, provider: fixedProvider{id: "shared", persistent: true}})
	var gate *agenttest.Gate
	eng := agenttest.NewScript(func(_ int, run agent.Run) []agenttest.Step {
		if gate != nil {
			return []agenttest.Step{agenttest.Checkpoint(), agenttest.WaitGate(gate)}
		}
		return []agenttest.Step{agenttest.Say("fresh")}
	})
	e.agents.put("worker", resumable{Engine: eng, refuse: errors.New("checkpoint from another version")})
	gate = agenttest.NewGate()
	first := e.delegate(t, cancelAt(t, gate), "worker", "task")
	require.Equal(t, delegation.StatusCanceled, first.Status)
	gate = nil
	second := e.delegate(t, timeout(t), "worker", "task")
	assert.Equal(t, "fresh", agenttest.ReplyText(second.Output))
	assert.NotEqual(t, first.RunID, second.RunID)

	ephemeral := newEnv(t, envConfig{resume: true, provider: fixedProvider{id: "shared"}})
	ephemeral.agents.put("worker", resumable{Engine: eng})
	gate = agenttest.NewGate()
	first = ephemeral.delegate(t, cancelAt(t, gate), "worker", "task")
	require.Equal(t, delegation.StatusCanceled, first.Status)
	gate = nil
	second = ephemeral.delegate(t, timeout(t), "worker", "task")
	assert.Equal(t, "fresh", agenttest.ReplyText(second.Output))
	ids, err := ephemeral.store.List(timeout(t))
	require.NoError(t, err)
	assert.Empty(t, ids, "a session that is not persistent keeps nothing")
}
