package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type ctxKey struct{}

// recHost records every call with its arguments and answers with values
// that say it answered.
type recHost struct {
	mu    sync.Mutex
	calls []string
	intr  chan agent.Interrupt
}

var (
	errInnerPublish    = errors.New("inner publish")
	errInnerCheckpoint = errors.New("inner checkpoint")
	errInnerUsage      = errors.New("inner usage")
)

func (h *recHost) record(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fmt.Sprintf(format, args...))
}

func (h *recHost) Calls() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

func (h *recHost) Publish(ctx context.Context, env event.Envelope) error {
	h.record("inner publish %s %v", env.Subject, ctx.Value(ctxKey{}))
	return errInnerPublish
}

func (h *recHost) Interrupts() <-chan agent.Interrupt {
	h.record("inner interrupts")
	return h.intr
}

func (h *recHost) AskUser(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error) {
	h.record("inner ask %s %v", p.Source, ctx.Value(ctxKey{}))
	return agent.UserReply{Metadata: map[string]string{"from": "inner"}}, nil
}

func (h *recHost) Checkpoint(ctx context.Context, cp agent.Checkpoint) error {
	h.record("inner checkpoint %s %v", cp.ExecID, ctx.Value(ctxKey{}))
	return errInnerCheckpoint
}

func (h *recHost) ReportUsage(ctx context.Context, u agent.Usage) error {
	h.record("inner usage %d %v", u.TotalTokens, ctx.Value(ctxKey{}))
	return errInnerUsage
}

// callAll calls every Host method once and returns what each returned.
func callAll(t *testing.T, h agent.Host) map[string]any {
	t.Helper()
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	reply, askErr := h.AskUser(ctx, agent.UserPrompt{Source: "node"})
	return map[string]any{
		"publish":    h.Publish(ctx, event.Envelope{Subject: "a.b"}),
		"interrupts": h.Interrupts(),
		"ask":        reply.Metadata["from"],
		"ask err":    askErr,
		"checkpoint": h.Checkpoint(ctx, agent.Checkpoint{ExecID: "run-1"}),
		"usage":      h.ReportUsage(ctx, agent.Usage{TotalTokens: 7}),
	}
}

// REF 1.12.2
// HostFuncs passes every method it does not replace through to Inner,
// with the same arguments and context, and returns Inner's answer.
func TestHostFuncsPassesThrough(t *testing.T) {
	t.Parallel()
	inner := &recHost{intr: make(chan agent.Interrupt, 1)}
	got := callAll(t, &agent.HostFuncs{Inner: inner})
	assert.ElementsMatch(t, []string{
		"inner publish a.b v", "inner interrupts", "inner ask node v", "inner checkpoint run-1 v", "inner usage 7 v",
	}, inner.Calls())
	assert.Equal(t, errInnerPublish, got["publish"])
	assert.Equal(t, (<-chan agent.Interrupt)(inner.intr), got["interrupts"])
	assert.Equal(t, "inner", got["ask"])
	assert.Nil(t, got["ask err"])
	assert.Equal(t, errInnerCheckpoint, got["checkpoint"])
	assert.Equal(t, errInnerUsage, got["usage"])
}

// REF 1.12.2
// Each replaced method goes to its function only; the others still reach
// Inner.
func TestHostFuncsReplacesOneMethod(t *testing.T) {
	t.Parallel()
	errMine := errors.New("mine")
	mine := make(chan agent.Interrupt)
	tests := []struct {
		method string // key in callAll's map and prefix of the inner call
		inner  string // the inner call that must not happen
		set    func(h *agent.HostFuncs, calls *[]string)
		want   any
	}{
		{"publish", "inner publish", func(h *agent.HostFuncs, calls *[]string) {
			h.PublishFn = func(ctx context.Context, env event.Envelope) error {
				*calls = append(*calls, fmt.Sprint("fn publish ", env.Subject, " ", ctx.Value(ctxKey{})))
				return errMine
			}
		}, errMine},
		{"interrupts", "inner interrupts", func(h *agent.HostFuncs, calls *[]string) {
			h.InterruptsFn = func() <-chan agent.Interrupt { *calls = append(*calls, "fn interrupts"); return mine }
		}, (<-chan agent.Interrupt)(mine)},
		{"ask", "inner ask", func(h *agent.HostFuncs, calls *[]string) {
			h.AskUserFn = func(ctx context.Context, p agent.UserPrompt) (agent.UserReply, error) {
				*calls = append(*calls, fmt.Sprint("fn ask ", p.Source, " ", ctx.Value(ctxKey{})))
				return agent.UserReply{Metadata: map[string]string{"from": "fn"}}, nil
			}
		}, "fn"},
		{"checkpoint", "inner checkpoint", func(h *agent.HostFuncs, calls *[]string) {
			h.CheckpointFn = func(ctx context.Context, cp agent.Checkpoint) error {
				*calls = append(*calls, fmt.Sprint("fn checkpoint ", cp.ExecID, " ", ctx.Value(ctxKey{})))
				return errMine
			}
		}, errMine},
		{"usage", "inner usage", func(h *agent.HostFuncs, calls *[]string) {
			h.ReportUsageFn = func(ctx context.Context, u agent.Usage) error {
				*calls = append(*calls, fmt.Sprint("fn usage ", u.TotalTokens, " ", ctx.Value(ctxKey{})))
				return errMine
			}
		}, errMine},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			t.Parallel()
			inner := &recHost{}
			var fnCalls []string
			h := &agent.HostFuncs{Inner: inner}
			tt.set(h, &fnCalls)
			got := callAll(t, h)
			assert.Equal(t, tt.want, got[tt.method])
			require.Len(t, fnCalls, 1)
			assert.Contains(t, fnCalls[0], "fn ")
			assert.Len(t, inner.Calls(), 4, "the four other methods reach Inner")
			for _, c := range inner.Calls() {
				assert.NotContains(t, c, tt.inner)
			}
		})
	}
}

func TestHostFuncsUnwrap(t *testing.T) {
	t.Parallel()
	inner := &recHost{}
	h := &agent.HostFuncs{Inner: inner}
	assert.Same(t, inner, h.UnwrapHost())
	var u agent.HostUnwrapper = h
	assert.NotNil(t, u)
	assert.Nil(t, (&agent.HostFuncs{}).UnwrapHost())
}

// A HostFuncs without Inner does not panic: calls it cannot serve are
// Internal errors and Interrupts never fires.
func TestHostFuncsWithoutInner(t *testing.T) {
	t.Parallel()
	h := &agent.HostFuncs{ReportUsageFn: func(context.Context, agent.Usage) error { return nil }}
	ctx := context.Background()
	for name, err := range map[string]error{
		"publish":    h.Publish(ctx, event.Envelope{}),
		"checkpoint": h.Checkpoint(ctx, agent.Checkpoint{}),
	} {
		assert.ErrorIs(t, err, fault.Internal, name)
	}
	_, err := h.AskUser(ctx, agent.UserPrompt{})
	assert.ErrorIs(t, err, fault.Internal)
	assert.Nil(t, h.Interrupts())
	assert.NoError(t, h.ReportUsage(ctx, agent.Usage{}))
}
