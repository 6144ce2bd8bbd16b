package observe_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/corral-rt/corral/observe"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// BenchmarkOneNodeTurn runs turns of a one-node graph agent without an
// observer, with one that only counts (no-op tracer), and with one that
// also records spans (an SDK provider with a discarding exporter):
//
//	go test -run '^$' -bench BenchmarkOneNodeTurn -benchmem ./observe
func BenchmarkOneNodeTurn(b *testing.B) {
	for _, mode := range []string{"bare", "metrics", "metrics+spans"} {
		b.Run(mode, func(b *testing.B) {
			app := newApp(b)
			switch mode {
			case "metrics":
				obs, err := observe.New(context.Background(), app, observe.Options{})
				require.NoError(b, err)
				defer obs.Close()
			case "metrics+spans":
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				defer tp.Shutdown(context.Background())
				obs, err := observe.New(context.Background(), app, observe.Options{TracerProvider: tp})
				require.NoError(b, err)
				defer obs.Close()
			}
			ctx := context.Background()
			lease, err := app.Sessions().Open(ctx, session.Key{AgentID: "one", ContextID: "bench"})
			require.NoError(b, err)
			defer lease.Close()
			req := agent.Request{Message: message.NewTextMessage(message.RoleUser, "hi")}
			for range 200 { // warm the runtime's pools before measuring
				turn, err := lease.Session().Start(ctx, req)
				require.NoError(b, err)
				_, err = turn.Wait(ctx)
				require.NoError(b, err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				turn, err := lease.Session().Start(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if res, err := turn.Wait(ctx); err != nil || res.Err != nil {
					b.Fatal(err, res.Err)
				}
			}
		})
	}
}
