package nats

import (
	"context"
	"errors"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/event"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Connect connects to NATS, makes sure the event stream and the lease
// bucket exist with cfg's settings, and starts receiving the events of
// the other nodes. The bus owns the connection; Close closes it. A
// server that cannot be reached within cfg.ConnectTimeout is
// NotAvailable; a bad cfg is Validation. Making sure of the stream and
// the bucket is asked again while the servers do not answer (a cluster
// electing its leaders, or too busy to answer in time), for as long as
// ctx lasts or, when ctx has no deadline, for SetupTimeout.
func Connect(ctx context.Context, cfg Config) (*Bus, error) {
	if ctx == nil {
		return nil, fault.New(fault.Validation, "nats connect", "ctx must not be nil")
	}
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	opts := []natsgo.Option{
		natsgo.Name(cfg.Node),
		natsgo.NoEcho(), // the node's own events reach its subscriptions locally
		natsgo.Timeout(cfg.ConnectTimeout),
		natsgo.MaxReconnects(-1),
		natsgo.ReconnectWait(100 * time.Millisecond),
		natsgo.ReconnectJitter(50*time.Millisecond, 50*time.Millisecond),
	}
	if cfg.NoDiscovery {
		opts = append(opts, natsgo.IgnoreDiscoveredServers())
	}
	nc, err := natsgo.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fault.Wrap(fault.NotAvailable, err, "nats connect", "%s", cfg.URL)
	}
	b, err := newBus(ctx, cfg, nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return b, nil
}

func newBus(ctx context.Context, cfg Config, nc *natsgo.Conn) (*Bus, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "nats connect", "jetstream")
	}
	b := &Bus{cfg: cfg, nc: nc, js: js, local: event.NewMemoryBusWithConfig(cfg.Bus),
		cursors: map[*CursorSubscription]struct{}{}, inDone: make(chan struct{}), seen: newIDWindow(dedupWindow)}
	for _, p := range cfg.Ephemeral {
		cp, _ := event.CompilePattern(p) // checked by resolve
		b.eph = append(b.eph, cp)
	}
	sctx, cancel := setupContext(ctx)
	defer cancel()
	if err := untilAnswered(sctx, b.ensureStream); err != nil {
		return nil, err
	}
	if err := untilAnswered(sctx, func(ctx context.Context) (err error) {
		b.own, err = newOwnership(ctx, b)
		return err
	}); err != nil {
		return nil, err
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	if err := b.startInbound(); err != nil {
		b.cancel()
		return nil, err
	}
	return b, nil
}

// SetupTimeout bounds how long Connect, given a ctx without a deadline,
// asks the servers to make sure of the stream and the bucket: a
// replicated stream is placed by a cluster that may be electing its
// leaders or answering slowly under load.
const SetupTimeout = 30 * time.Second

// setupAttempt bounds one attempt of Connect's setup.
const setupAttempt = 5 * time.Second

// setupContext bounds Connect's setup: ctx's deadline, or SetupTimeout.
func setupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, SetupTimeout)
}

// untilAnswered runs step, which is idempotent, again while it fails for
// want of an answer from the servers, until ctx ends; each attempt waits
// at most setupAttempt, since a request that reached no leader is never
// answered.
func untilAnswered(ctx context.Context, step func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, setupAttempt)
		err := step(actx)
		cancel()
		if err == nil || !unanswered(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retryPause):
		}
	}
}

// unanswered reports whether err says that the servers did not answer in
// time or could not yet: no JetStream leader (temporarily unavailable),
// or not enough servers seen online to place the replicas (a cluster
// whose servers are starting; on a cluster too small for the replicas it
// stays so until ctx ends). Those are worth asking again, unlike a
// refusal.
func unanswered(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// 503 is also the code of a stream's store refusing a message for
		// its limits (err_code 10077, "maximum messages exceeded"), which
		// asking again cannot change.
		return (apiErr.Code == 503 && apiErr.ErrorCode != jsStoreFailed) ||
			apiErr.ErrorCode == 10008 || apiErr.ErrorCode == 10005
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, natsgo.ErrTimeout) ||
		errors.Is(err, natsgo.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
}

// refused reports whether err is an answer that asking again cannot
// change: the stream's own refusal (a limit it holds, a message it does
// not take), or a connection closed for good. A refusal for want of a
// leader or of servers (unanswered) is not one.
func refused(err error) bool {
	if errors.Is(err, natsgo.ErrConnectionClosed) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && !unanswered(err) && !missing(err)
}

// jsStoreFailed is the JetStream error code of a stream's store refusing a
// message (its limits: maximum messages, bytes, messages per subject).
const jsStoreFailed = 10077
