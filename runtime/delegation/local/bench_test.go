package local_test

import (
	"context"
	"testing"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/delegation"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// BenchmarkRoundTrip compares a delegation of the writer (a two-node graph
// in goja) with a direct session turn of the same agent in the same
// runtime: "direct" opens a session, starts a turn and waits for it;
// "delegate" calls the deployment's delegation service, which does the
// same through a fresh ephemeral session and deletes it afterwards.
func BenchmarkRoundTrip(b *testing.B) {
	app := buildApp(b)
	v, _ := app.Resource("delegation")
	svc := v.(delegation.Service)
	ctx := context.Background()
	msg := message.NewTextMessage(message.RoleUser, "tea")

	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			lease, err := app.Sessions().Open(ctx, session.Key{AgentID: "writer", ContextID: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			turn, err := lease.Session().Start(ctx, agent.Request{Message: msg})
			if err != nil {
				b.Fatal(err)
			}
			if res, err := turn.Wait(ctx); err != nil || res.Status != agent.StatusCompleted {
				b.Fatal(res, err)
			}
			lease.Close()
		}
	})
	b.Run("delegate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := svc.Delegate(ctx, delegation.Request{Target: "writer", Input: msg})
			if err != nil || resp.Status != delegation.StatusSucceeded {
				b.Fatal(resp, err)
			}
		}
	})
}
