package serve

import (
	"testing"
	"time"
)

// The clean-ups that start within one window share a context, which ends
// one to two windows after each of them started: bounded, without a timer
// per request.
func TestCleanupCtxIsSharedAndBounded(t *testing.T) {
	s := &Server{}
	start := time.Now()
	a, b := s.cleanupCtx(), s.cleanupCtx()
	if a != b {
		t.Fatal("two clean-ups of one window have two contexts")
	}
	d, ok := a.Deadline()
	if !ok || d.Before(start.Add(cleanupWindow)) || d.After(time.Now().Add(2*cleanupWindow)) {
		t.Fatalf("deadline %v is not one to two windows after %v", d, start)
	}
	s.cleanupFrom = s.cleanupFrom.Add(-cleanupWindow) // the window has passed
	if c := s.cleanupCtx(); c == a || c.Err() != nil {
		t.Fatal("a new window does not get a new, live context")
	}
	if a.Err() != nil {
		t.Fatal("the previous window's context ended before its deadline")
	}
}
