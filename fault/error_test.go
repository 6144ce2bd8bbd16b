package fault_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"

	"github.com/corral-rt/corral/fault"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKindsList(t *testing.T) {
	t.Parallel()
	kinds := fault.Kinds()
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.String()
		assert.Equal(t, k.String(), k.Error())
		assert.Regexp(t, regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`), k.String())
	}
	assert.Equal(t, []string{"validation", "not_found", "conflict", "not_available", "rate_limit", "budget_exceeded",
		"timeout", "aborted", "internal", "interrupted", "policy_denied", "forbidden"}, names)
	assert.Equal(t, []*fault.Kind{fault.Validation, fault.NotFound, fault.Conflict, fault.NotAvailable, fault.RateLimit,
		fault.BudgetExceeded, fault.Timeout, fault.Aborted, fault.Internal, fault.Interrupted, fault.PolicyDenied,
		fault.Forbidden}, kinds)

	// The slice is the caller's.
	kinds[0] = fault.Forbidden
	assert.Same(t, fault.Validation, fault.Kinds()[0])

	for _, bad := range []string{"", "Validation", "VALIDATION", "not-found", " validation", "unknown"} {
		k, ok := fault.ParseKind(bad)
		assert.False(t, ok, bad)
		assert.Nil(t, k, bad)
	}
}

func TestKindText(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(map[string]any{"kind": fault.NotFound, "kinds": []*fault.Kind{fault.Timeout, fault.Aborted}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"not_found","kinds":["timeout","aborted"]}`, string(b))

	var none *fault.Kind
	assert.Equal(t, "", none.String())
	assert.Equal(t, "", fault.KindOf(errors.New("plain")).String())
}

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	cause := errors.New("disk full")
	tests := []struct {
		name string
		err  *fault.Error
		want string
	}{
		{"op, msg and cause", &fault.Error{Kind: fault.Internal, Op: "save", Msg: "file \"a\"", Err: cause}, `save: file "a": disk full`},
		{"op and msg", &fault.Error{Kind: fault.Internal, Op: "save", Msg: "no room"}, "save: no room"},
		{"op and cause", &fault.Error{Kind: fault.Internal, Op: "save", Err: cause}, "save: disk full"},
		{"msg and cause", &fault.Error{Kind: fault.Internal, Msg: "file", Err: cause}, "file: disk full"},
		{"only op", &fault.Error{Kind: fault.Internal, Op: "save"}, "save"},
		{"only msg", &fault.Error{Kind: fault.Internal, Msg: "no room"}, "no room"},
		{"only cause", &fault.Error{Kind: fault.Internal, Err: cause}, "disk full"},
		{"nothing but the kind", &fault.Error{Kind: fault.RateLimit}, "rate_limit"},
		{"nothing at all", &fault.Error{}, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.EqualError(t, tt.err, tt.want)
		})
	}
}

func TestNewAndWrapFormat(t *testing.T) {
	t.Parallel()
	cause := errors.New("boom")
	assert.EqualError(t, fault.New(fault.Validation, "deploy", "resource %q: %d deps", "db", 2), `deploy: resource "db": 2 deps`)
	assert.EqualError(t, fault.New(fault.Validation, "deploy", "100%% sure"), "deploy: 100% sure")
	assert.EqualError(t, fault.New(fault.Validation, "deploy", ""), "deploy")
	assert.EqualError(t, fault.Wrap(fault.Internal, cause, "load", "file %q", "a.yaml"), `load: file "a.yaml": boom`)
	assert.EqualError(t, fault.Wrap(fault.Internal, cause, "load", "100%% read"), "load: 100% read: boom")
	assert.EqualError(t, fault.Wrap(fault.Internal, cause, "load", ""), "load: boom")
	assert.EqualError(t, fault.Wrap(fault.Internal, cause, "", ""), "boom")

	var fe *fault.Error
	require.ErrorAs(t, fault.Wrap(fault.NotFound, cause, "load", "x"), &fe)
	assert.Equal(t, &fault.Error{Kind: fault.NotFound, Op: "load", Msg: "x", Err: cause}, fe)
	require.ErrorAs(t, fmt.Errorf("outer: %w", fault.New(fault.Conflict, "set", "twice")), &fe)
	assert.Equal(t, &fault.Error{Kind: fault.Conflict, Op: "set", Msg: "twice"}, fe)
}

// KindOf is the first kind met depth first; errors.Is matches every kind
// in the chain.
func TestKindOfOrder(t *testing.T) {
	t.Parallel()
	notFound := fault.New(fault.NotFound, "load", "no file")
	wrapped := fault.Wrap(fault.Internal, notFound, "boot", "")
	assert.Equal(t, fault.Internal, fault.KindOf(wrapped), "the outer kind comes first")
	assert.ErrorIs(t, wrapped, fault.Internal)
	assert.ErrorIs(t, wrapped, fault.NotFound)
	assert.ErrorIs(t, wrapped, notFound)
	assert.True(t, fault.Is(wrapped, fault.NotFound))
	assert.False(t, fault.Is(wrapped, fault.Conflict))
	assert.False(t, fault.Is(nil, fault.Conflict))

	joined := errors.Join(errors.New("plain"), fault.New(fault.Conflict, "a", "b"), notFound)
	assert.Equal(t, fault.Conflict, fault.KindOf(joined))
	deep := errors.Join(fmt.Errorf("x: %w", fmt.Errorf("y: %w", notFound)), fault.New(fault.Conflict, "a", "b"))
	assert.Equal(t, fault.NotFound, fault.KindOf(deep), "depth first: the first branch is walked to the end")

	// A bare kind is an error of its kind.
	assert.Equal(t, fault.Timeout, fault.KindOf(fault.Timeout))
	assert.Equal(t, fault.Timeout, fault.KindOf(fmt.Errorf("wait: %w", fault.Timeout)))
}

func TestErrorWithoutKindDoesNotPanic(t *testing.T) {
	t.Parallel()
	cause := fault.New(fault.NotFound, "x", "y")
	err := &fault.Error{Op: "op", Err: cause}
	assert.Equal(t, fault.NotFound, fault.KindOf(err))
	assert.Nil(t, fault.KindOf(&fault.Error{Msg: "m"}))
	assert.NotErrorIs(t, &fault.Error{Msg: "m"}, fault.Validation)
}

func TestFromContextKinds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	<-ctx.Done()
	err := fault.FromContext(ctx.Err(), "wait for turn")
	assert.EqualError(t, err, "wait for turn: context deadline exceeded")
	assert.Equal(t, fault.Timeout, fault.KindOf(err))
	assert.NotErrorIs(t, err, fault.Aborted)

	ctx2, cancel2 := context.WithCancelCause(context.Background())
	cancel2(errors.New("user left"))
	err = fault.FromContext(ctx2.Err(), "")
	assert.EqualError(t, err, "context canceled")
	assert.Equal(t, fault.Aborted, fault.KindOf(err))
	assert.NotErrorIs(t, err, fault.Timeout)

	// An error that already has a kind keeps it, even when it wraps a
	// context error.
	kept := fault.Wrap(fault.Interrupted, context.Canceled, "run", "")
	assert.Same(t, kept, fault.FromContext(kept, "wait"))
}

func TestKindsConcurrentUse(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("x: %w", fault.Wrap(fault.Internal, fault.New(fault.NotFound, "a", "b"), "c", "d"))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_ = err.Error()
				if fault.KindOf(err) != fault.Internal || !errors.Is(err, fault.NotFound) {
					t.Error("kind lost under concurrent use")
					return
				}
				_, _ = fault.ParseKind("timeout")
				_ = fault.Kinds()
			}
		})
	}
	wg.Wait()
}
