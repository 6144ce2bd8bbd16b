package session_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/agent/agenttest"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func textPrompt(text string) agent.UserPrompt {
	return agent.UserPrompt{Parts: []message.Part{message.TextPart(text)}}
}

func textReply(text string) agent.UserReply {
	return agent.UserReply{Parts: []message.Part{message.TextPart(text)}}
}

// promptWatch records the prompt events of a bus.
type promptWatch struct {
	requested, resolved *busLog
}

func watchPrompts(t testing.TB, bus event.Bus) promptWatch {
	return promptWatch{
		requested: recordBus(t, bus, session.PatternPromptRequested()),
		resolved:  recordBus(t, bus, session.PatternPromptResolved()),
	}
}

// nth waits for the n-th (from 1) prompt request.
func (w promptWatch) nth(t testing.TB, n int) session.PromptRequested {
	t.Helper()
	return decode[session.PromptRequested](t, w.requested.await(t, n, nil)[n-1])
}

// resolution waits for the resolution of prompt id.
func (w promptWatch) resolution(t testing.TB, id string) session.PromptResolved {
	t.Helper()
	var out session.PromptResolved
	w.resolved.await(t, 1, func(env event.Envelope) bool {
		r := decode[session.PromptResolved](t, env)
		if r.PromptID == id {
			out = r
			return true
		}
		return false
	})
	return out
}

// answer is what an AskUser call returned.
type answer struct {
	reply agent.UserReply
	err   error
}

// askAsync asks text on its own goroutine and reports the answer on the
// returned channel.
func askAsync(ctx context.Context, host agent.Host, text string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		r, err := host.AskUser(ctx, textPrompt(text))
		ch <- answer{r, err}
	}()
	return ch
}

func await(t testing.TB, ch <-chan answer) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(patience):
		t.Fatal("AskUser did not return")
		return answer{}
	}
}

// REF 2.5.1
func TestPromptRequested(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New(agenttest.AskUser("name?")))
	w := watchPrompts(t, e.bus)
	tr := e.start("c", "hi")
	env := w.requested.await(t, 1, nil)[0]
	assert.Equal(t, event.SubjectPromptRequested(tr.RunID()), env.Subject)
	assert.Equal(t, tr.RunID(), env.Header(event.HeaderRunID))
	assert.Equal(t, botID, env.Header(event.HeaderAgentID))
	p := decode[session.PromptRequested](t, env)
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{32}$`), p.PromptID)
	assert.Equal(t, tr.RunID(), p.RunID)
	assert.Equal(t, tr.RunID(), p.TurnID)
	assert.Equal(t, "name?", message.Message{Parts: p.Prompt.Parts}.Text())
	assert.Equal(t, agenttest.DefaultName, p.Prompt.Source)
	assert.False(t, e.m.Idle(), "a pending prompt is session activity")
	require.NoError(t, tr.Reply(context.Background(), p.PromptID, textReply("ann")))
	settle(t, tr)
}

// Every resolution publishes PromptResolved with its status and gives
// AskUser its answer.
// REF 2.5.2
func TestPromptResolutions(t *testing.T) {
	t.Parallel()
	t.Run("replied", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, agenttest.New(agenttest.AskUser("name?")))
		w := watchPrompts(t, e.bus)
		tr := e.start("c", "hi")
		p := w.nth(t, 1)
		require.NoError(t, tr.Reply(context.Background(), p.PromptID, textReply("ann")))
		r := w.resolution(t, p.PromptID)
		assert.Equal(t, session.PromptReplied, r.Status)
		assert.Equal(t, tr.RunID(), r.RunID)
		assert.Equal(t, tr.RunID(), r.TurnID)
		res := settle(t, tr)
		assert.Equal(t, "ann", res.LastBoard.Vars[agenttest.VarReply])
	})
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		var got error
		eng := agenttest.New(agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
			short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			_, got = env.Host().AskUser(short, textPrompt("quick?"))
			return nil
		}))
		e := newEnv(t, eng)
		w := watchPrompts(t, e.bus)
		tr := e.start("c", "hi")
		p := w.nth(t, 1)
		assert.Equal(t, session.PromptExpired, w.resolution(t, p.PromptID).Status)
		settle(t, tr)
		require.ErrorIs(t, got, context.DeadlineExceeded)
	})
	t.Run("interrupted", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, agenttest.New(agenttest.AskUser("name?")))
		w := watchPrompts(t, e.bus)
		tr := e.start("c", "hi")
		p := w.nth(t, 1)
		require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel}))
		assert.Equal(t, session.PromptInterrupted, w.resolution(t, p.PromptID).Status)
		res := settle(t, tr)
		var ie *agent.InterruptedError
		require.ErrorAs(t, res.Err, &ie, "AskUser returned agent.Interrupted")
	})
	t.Run("turn ended", func(t *testing.T) {
		t.Parallel()
		var pending <-chan answer
		eng := agenttest.New(agenttest.Func(func(_ context.Context, env *agenttest.Env) error {
			// A prompt that outlives the run: the turn ends under it.
			pending = askAsync(context.Background(), env.Host(), "later?")
			return nil
		}))
		e := newEnv(t, eng)
		w := watchPrompts(t, e.bus)
		tr := e.start("c", "hi")
		settle(t, tr)
		a := await(t, pending)
		require.ErrorIs(t, a.err, session.ErrPromptClosed)
		isKind(t, a.err, fault.NotAvailable)
		// The request may or may not have been published before the turn
		// ended; a published one is resolved as closed.
		for _, env := range w.requested.all() {
			p := decode[session.PromptRequested](t, env)
			assert.Equal(t, session.PromptClosed, w.resolution(t, p.PromptID).Status)
		}
	})
	t.Run("turn ended while waiting", func(t *testing.T) {
		t.Parallel()
		var pending <-chan answer
		asked := make(chan struct{})
		eng := agenttest.New(agenttest.Func(func(_ context.Context, env *agenttest.Env) error {
			pending = askAsync(context.Background(), env.Host(), "later?")
			<-asked
			return nil
		}))
		e := newEnv(t, eng)
		w := watchPrompts(t, e.bus)
		tr := e.start("c", "hi")
		p := w.nth(t, 1)
		close(asked)
		settle(t, tr)
		assert.Equal(t, session.PromptClosed, w.resolution(t, p.PromptID).Status)
		require.ErrorIs(t, await(t, pending).err, session.ErrPromptClosed)
		require.ErrorIs(t, tr.Reply(context.Background(), p.PromptID, textReply("late")), session.ErrPromptClosed)
	})
	t.Run("request publish fails", func(t *testing.T) {
		t.Parallel()
		refused := fault.New(fault.NotAvailable, "publish", "refused")
		var got error
		eng := agenttest.New(agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
			_, got = env.Host().AskUser(ctx, textPrompt("name?"))
			return nil
		}))
		e := newEnv(t, eng)
		bus := &refusingBus{Bus: e.bus, refuse: func(subject string) error {
			if strings.HasSuffix(subject, ".prompt.requested") {
				return refused
			}
			return nil
		}}
		deps := e.deps(nil, false)
		deps.Bus = bus
		require.NoError(t, e.m.SwapDeps(deps, nil))
		resolved := recordBus(t, e.bus, session.PatternPromptResolved())
		tr := e.start("c", "hi")
		settle(t, tr)
		require.ErrorIs(t, got, refused, "the publish error is returned")
		r := decode[session.PromptResolved](t, resolved.await(t, 1, nil)[0])
		assert.Equal(t, session.PromptClosed, r.Status)
		assert.Equal(t, tr.RunID(), r.RunID)
	})
}

// refusingBus fails the publishes that refuse picks.
type refusingBus struct {
	event.Bus
	refuse func(subject string) error
}

func (b *refusingBus) Publish(ctx context.Context, env event.Envelope) error {
	if err := b.refuse(env.Subject); err != nil {
		return err
	}
	return b.Bus.Publish(ctx, env)
}

// REF 2.5.3
func TestAskUserAfterInterruptOrEnd(t *testing.T) {
	t.Parallel()
	g := agenttest.NewGate()
	var afterInterrupt error
	eng := agenttest.New(agenttest.WaitGate(g), agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
		_, afterInterrupt = env.Host().AskUser(ctx, textPrompt("still there?"))
		return nil
	}))
	e := newEnv(t, eng)
	t.Cleanup(g.Open)
	w := watchPrompts(t, e.bus)
	tr := e.start("c", "hi")
	reached(t, g)
	require.NoError(t, tr.Interrupt(agent.Interrupt{Cause: agent.CauseCustom, Detail: "x"}))
	g.Open()
	settle(t, tr)
	var ie *agent.InterruptedError
	require.ErrorAs(t, afterInterrupt, &ie)
	assert.Equal(t, agent.CauseCustom, ie.Interrupt.Cause)
	assert.Empty(t, w.requested.all(), "nothing is asked after an interrupt")

	// The turn's AskUser, called after the turn ended.
	reqs := e.hostRequests()
	require.Len(t, reqs, 1)
	_, err := reqs[0].AskUser(context.Background(), textPrompt("hello?"))
	require.ErrorIs(t, err, session.ErrPromptClosed)

	quiet := newEnv(t, agenttest.New())
	settle(t, quiet.start("c", "hi"))
	_, err = quiet.hostRequests()[0].AskUser(context.Background(), textPrompt("hello?"))
	require.ErrorIs(t, err, session.ErrPromptClosed)
}

// REF 2.5.4
func TestReplyErrors(t *testing.T) {
	t.Parallel()
	var expiredErr error
	eng := agenttest.New(agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
		short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		_, expiredErr = env.Host().AskUser(short, textPrompt("quick?"))
		return nil
	}), agenttest.AskUser("name?"))
	e := newEnv(t, eng)
	w := watchPrompts(t, e.bus)
	tr := e.start("c", "hi")
	expired := w.nth(t, 1)
	open := w.nth(t, 2)
	require.ErrorIs(t, expiredErr, context.DeadlineExceeded)

	isKind(t, tr.Reply(nil, open.PromptID, textReply("x")), fault.Validation) //nolint:staticcheck // nil ctx on purpose
	err := tr.Reply(context.Background(), "0123456789abcdef0123456789abcdef", textReply("x"))
	require.ErrorIs(t, err, session.ErrPromptUnknown)
	isKind(t, err, fault.NotFound)
	err = tr.Reply(context.Background(), expired.PromptID, textReply("x"))
	require.ErrorIs(t, err, session.ErrPromptClosed)
	isKind(t, err, fault.NotAvailable)
	require.NoError(t, tr.Reply(context.Background(), open.PromptID, textReply("ann")))
	err = tr.Reply(context.Background(), open.PromptID, textReply("bob"))
	require.ErrorIs(t, err, session.ErrPromptDuplicate)
	isKind(t, err, fault.Conflict)
	res := settle(t, tr)
	assert.Equal(t, "ann", res.LastBoard.Vars[agenttest.VarReply], "the first reply wins")
	require.ErrorIs(t, tr.Reply(context.Background(), open.PromptID, textReply("bob")), session.ErrPromptDuplicate)
}

// Replying to one prompt leaves the others pending.
// REF 2.5.5
func TestPromptsIndependent(t *testing.T) {
	t.Parallel()
	var first, second <-chan answer
	eng := agenttest.New(agenttest.Func(func(ctx context.Context, env *agenttest.Env) error {
		first = askAsync(ctx, env.Host(), "first?")
		second = askAsync(ctx, env.Host(), "second?")
		a, b := <-first, <-second
		env.Board().Vars["answers"] = message.Message{Parts: a.reply.Parts}.Text() + "," + message.Message{Parts: b.reply.Parts}.Text()
		return errors.Join(a.err, b.err)
	}))
	e := newEnv(t, eng)
	w := watchPrompts(t, e.bus)
	tr := e.start("c", "hi")
	byText := map[string]string{}
	for i := 1; i <= 2; i++ {
		p := w.nth(t, i)
		byText[message.Message{Parts: p.Prompt.Parts}.Text()] = p.PromptID
	}
	require.NoError(t, tr.Reply(context.Background(), byText["second?"], textReply("two")))
	assert.Equal(t, session.PromptReplied, w.resolution(t, byText["second?"]).Status)
	time.Sleep(10 * time.Millisecond)
	assert.Len(t, w.resolved.all(), 1, "the first prompt is still pending")
	assert.False(t, tr.State().Terminal())
	require.NoError(t, tr.Reply(context.Background(), byText["first?"], textReply("one")))
	res := settle(t, tr)
	assert.Equal(t, agent.StatusCompleted, res.Status)
	assert.Equal(t, "one,two", res.LastBoard.Vars["answers"])
}

// REF 2.5.6
func TestPromptPatterns(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "agent.run.*.prompt.requested", session.PatternPromptRequested())
	assert.Equal(t, "agent.run.*.prompt.resolved", session.PatternPromptResolved())
	for _, run := range []string{"run-0123456789abcdef", "run-ffffffffffffffff"} {
		for pattern, subject := range map[string]string{
			session.PatternPromptRequested(): event.SubjectPromptRequested(run),
			session.PatternPromptResolved():  event.SubjectPromptResolved(run),
		} {
			p, err := event.CompilePattern(pattern)
			require.NoError(t, err)
			assert.True(t, p.Match(subject), "%s matches %s", pattern, subject)
		}
	}
	p, err := event.CompilePattern(session.PatternPromptRequested())
	require.NoError(t, err)
	assert.False(t, p.Match(event.SubjectPromptResolved("run-0123456789abcdef")))
}

// StartConfig.AskUser answers directly: no prompt event is published and
// Reply knows no prompt.
// REF 2.5.1
// REF 2.2.1
func TestAskUserOverridePublishesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, agenttest.New(agenttest.AskUser("a?"), agenttest.AskUser("b?")))
	all := recordBus(t, e.bus, "agent.run.>")
	var mu sync.Mutex
	n := 0
	tr := e.startConfig("c", "hi", session.StartConfig{AskUser: func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return textReply("auto"), nil
	}})
	settle(t, tr)
	assert.Equal(t, 2, n)
	envs := all.await(t, 2, nil) // the run's start and end
	for _, env := range envs {
		assert.NotContains(t, env.Subject, ".prompt.", "no prompt event")
	}
}
