package fault_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-rt/corral/fault"
)

func ExampleNew() {
	err := fmt.Errorf("build: %w", fault.New(fault.Validation, "deploy", "version is required"))
	fmt.Println(err)
	fmt.Println(errors.Is(err, fault.Validation), fault.KindOf(err))
	// Output:
	// build: deploy: version is required
	// true validation
}

// A sentinel made with New matches itself and its kind.
func ExampleNew_sentinel() {
	errClosed := fault.New(fault.NotAvailable, "event", "bus closed")
	err := fmt.Errorf("publish %q: %w", "agent.run.r1", errClosed)
	fmt.Println(errors.Is(err, errClosed), errors.Is(err, fault.NotAvailable))
	// Output:
	// true true
}

func ExampleWrap() {
	cause := errors.New("permission denied")
	err := fault.Wrap(fault.Forbidden, cause, "read settings", "file %q", "db.yaml")
	fmt.Println(err)
	fmt.Println(fault.KindOf(err), errors.Is(err, cause))
	// Output:
	// read settings: file "db.yaml": permission denied
	// forbidden true
}

func ExampleKindOf() {
	inner := fault.New(fault.NotFound, "load", "no checkpoint %q", "run-1")
	err := fault.Wrap(fault.Internal, inner, "resume", "")
	fmt.Println(fault.KindOf(err))
	fmt.Println(errors.Is(err, fault.NotFound))
	k, ok := fault.ParseKind("not_found")
	fmt.Println(k, ok)
	// Output:
	// internal
	// true
	// not_found true
}

func ExampleFromContext() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := fault.FromContext(ctx.Err(), "wait for reply")
	fmt.Println(err)
	fmt.Println(fault.KindOf(err), errors.Is(err, context.Canceled))
	// Output:
	// wait for reply: context canceled
	// aborted true
}
