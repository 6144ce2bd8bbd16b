package graph_test

import (
	"context"
	"sync"
	"testing"

	"github.com/corral-rt/corral/engine/graph"
	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoService answers every delegation with resp, or with the input's
// text when resp is the zero response, and records the requests.
type echoService struct {
	mu   sync.Mutex
	reqs []delegation.Request
	resp delegation.Response
}

func (s *echoService) Delegate(_ context.Context, req delegation.Request) (delegation.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req.Clone())
	if s.resp.ID != "" {
		return s.resp, nil
	}
	return delegation.Response{ID: "dlg-1", Target: req.Target, RunID: "run-child", Status: delegation.StatusSucceeded,
		Output: []message.Message{message.NewTextMessage(message.RoleAssistant, "echo: "+req.Input.Text())}}, nil
}

func (s *echoService) Get(context.Context, string) (delegation.Response, error) {
	return delegation.Response{}, fault.New(fault.NotFound, "get", "none")
}

// delegateJournalHost records the run's journal.
type delegateJournalHost struct {
	agent.Host
	j *hostabi.Journal
}

func (h *delegateJournalHost) Journal() *hostabi.Journal { return h.j }
func (h *delegateJournalHost) UnwrapHost() agent.Host    { return h.Host }

// runDelegate builds a one-node graph of a delegate node with config and
// runs it with caps granted, on a board whose main channel holds "hello".
func runDelegate(t *testing.T, svc delegation.Service, caps []string, config string) (*agent.Board, *hostabi.Journal, error) {
	t.Helper()
	doc := parseDoc(t, `name: d
entry: ask
nodes:
  - id: ask
    type: delegate
    config: `+config+`
edges:
  - {from: ask, to: __end__}
`)
	j := hostabi.NewJournal()
	e := buildWith(t, doc, nil, graph.Options{})
	board := agent.NewBoard()
	board.Vars["topic"] = "tea"
	board.Append(agent.MainChannel, userMessage("hello"))
	run := testRun()
	run.Capabilities = caps
	host := &delegateJournalHost{Host: delegation.WithService(agenttest.NewHost(), svc), j: j}
	out, err := e.Execute(context.Background(), run, host, board)
	return out, j, err
}

// REF 6.2.1 (the delegate node speaks Request and Response): the
// node sends the text of message (with ${board} references resolved) or
// the last message of message_channel, with inputs; it writes the output
// text, messages and result; the delegation is journaled.
func TestDelegateNode(t *testing.T) {
	t.Parallel()
	svc := &echoService{}
	board, j, err := runDelegate(t, svc, []string{"delegate:writer"},
		`{agent: writer, message: "about ${board.topic}", inputs: {n: 1}, output_key: answer, result_key: result, output_channel: notes}`)
	require.NoError(t, err)
	require.Len(t, svc.reqs, 1)
	assert.Equal(t, "writer", svc.reqs[0].Target)
	assert.Equal(t, "about tea", svc.reqs[0].Input.Text())
	assert.Equal(t, message.RoleUser, svc.reqs[0].Input.Role)
	assert.Equal(t, map[string]any{"n": float64(1)}, svc.reqs[0].Inputs)
	assert.Equal(t, "echo: about tea", board.Vars["answer"])
	assert.Equal(t, "succeeded", board.Vars["result"].(map[string]any)["status"])
	require.Len(t, board.Channel("notes"), 1)
	assert.Equal(t, "echo: about tea", board.Channel("notes")[0].Text())
	entries := j.Entries()
	require.Len(t, entries, 1)
	assert.Equal(t, hostabi.FuncDelegate, entries[0].Func)
	assert.Equal(t, "ask", entries[0].Node)

	board, _, err = runDelegate(t, svc, []string{"delegate"}, `{agent: writer, message_channel: __main_channel, output_channel: __main_channel}`)
	require.NoError(t, err)
	assert.Equal(t, "hello", svc.reqs[1].Input.Text())
	main := board.Channel(agent.MainChannel)
	assert.Equal(t, "echo: hello", main[len(main)-1].Text())
}

// REF 6.2.1: a delegated run that failed fails the node with its
// error's kind, unless allow_failure keeps going; a target the document
// does not grant is PolicyDenied.
func TestDelegateNodeFailures(t *testing.T) {
	t.Parallel()
	failed := &echoService{resp: delegation.Response{ID: "dlg-9", Target: "writer", Status: delegation.StatusFailed,
		Error: &delegation.ErrorInfo{Code: "budget_exceeded", Message: "too long"}}}
	_, _, err := runDelegate(t, failed, []string{"delegate"}, `{agent: writer, message: hi}`)
	require.Error(t, err)
	assert.ErrorIs(t, err, fault.BudgetExceeded)
	assert.Contains(t, err.Error(), `node "ask"`)

	board, _, err := runDelegate(t, failed, []string{"delegate"}, `{agent: writer, message: hi, allow_failure: true, result_key: r}`)
	require.NoError(t, err)
	assert.Equal(t, "failed", board.Vars["r"].(map[string]any)["status"])

	canceled := &echoService{resp: delegation.Response{ID: "dlg-8", Target: "writer", Status: delegation.StatusCanceled}}
	_, _, err = runDelegate(t, canceled, []string{"delegate"}, `{agent: writer, message: hi}`)
	assert.ErrorIs(t, err, fault.Aborted)

	svc := &echoService{}
	for _, caps := range [][]string{nil, {}, {"delegate:critic"}, {"emit"}} {
		_, _, err := runDelegate(t, svc, caps, `{agent: writer, message: hi}`)
		assert.ErrorIs(t, err, fault.PolicyDenied, "caps %v", caps)
	}
	assert.Empty(t, svc.reqs)

	_, _, err = runDelegate(t, svc, []string{"delegate"}, `{agent: writer, message_channel: empty}`)
	assert.ErrorIs(t, err, fault.Validation)
}

// The delegate node's config is checked at build: a target, exactly one of
// message and message_channel, and no unknown key.
func TestDelegateNodeConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []string{
		`{message: hi}`,
		`{agent: " ", message: hi}`,
		`{agent: writer}`,
		`{agent: writer, message: hi, message_channel: c}`,
		`{agent: writer, message: hi, model: x}`,
	} {
		doc := parseDoc(t, `name: d
entry: ask
nodes:
  - id: ask
    type: delegate
    config: `+cfg+`
edges:
  - {from: ask, to: __end__}
`)
		_, err := graph.Build(context.Background(), doc, graph.Options{})
		require.Error(t, err, cfg)
		assert.ErrorIs(t, err, fault.Validation, cfg)
		assert.Contains(t, err.Error(), `"ask"`, cfg)
	}
}
