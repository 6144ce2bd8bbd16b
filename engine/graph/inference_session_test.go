package graph_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/engine/scripted"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/resource"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/sandbox/js"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assistant builds the offline assistant deployment of
// testdata/graph/assistant.
func assistant(t *testing.T) *runtime.Runtime {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(testdata, "assistant"))
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(dir, "deploy.yaml"))
	require.NoError(t, err)
	doc, err := deploy.ParseWithConfig(src, deploy.ParseConfig{Filename: "deploy.yaml", BaseDir: dir})
	require.NoError(t, err)
	reg := resource.NewRegistry()
	reg.MustRegister(event.NewFactory(), js.Factory(), graph.Factory(), scripted.Factory())
	app, err := runtime.NewBuilder(reg).Build(context.Background(), doc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close() })
	return app
}

// A deployed agent whose inference node talks to the scripted provider
// answers turn after turn, streaming each reply.
func TestSessionInferenceConversation(t *testing.T) {
	t.Parallel()
	// REF 5.3.1 (the inference node in a deployed agent: streamed reply appended, usage reported)
	app := assistant(t)
	lease, err := app.Sessions().Open(context.Background(), session.Key{AgentID: "assistant", ContextID: "demo"})
	require.NoError(t, err)
	defer lease.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	say := func(text string) (*agent.Result, string) {
		sink := &textSink{}
		turn, err := lease.Session().Start(ctx, agent.Request{Message: message.NewTextMessage(message.RoleUser, text)},
			session.SinkSpec{ID: "console", Sink: sink})
		require.NoError(t, err)
		res, err := turn.Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, agent.StatusCompleted, res.Status, "%v", res.Err)
		return res, sink.String()
	}
	res, streamed := say("Hi there")
	want := "Hello! I am a scripted assistant running offline. Ask me what I can do."
	require.Len(t, res.Output, 1)
	assert.Equal(t, want, res.Output[0].Text())
	assert.Equal(t, want, streamed)
	assert.Positive(t, res.Usage.TotalTokens)

	res, streamed = say("So what can you do?")
	assert.Contains(t, streamed, "I stream my replies word by word")
	assert.Equal(t, streamed, res.LastBoard.Vars["reply"])
	assert.Equal(t, message.RoleAssistant, res.LastBoard.Channel(agent.MainChannel)[1].Role)

	_, streamed = say("Tell me a story")
	assert.Equal(t, "You said: Tell me a story", streamed)
}
