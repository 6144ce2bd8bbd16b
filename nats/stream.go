package nats

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The streams a bus uses: making the event stream and checking that it
// and the lease bucket serve this deployment, making them again when they
// are gone, telling what the server refused, and reading a stream's
// newest message.

// ensureStream makes the event stream, or updates its settings, once
// checkDeployment has found it free or this deployment's.
func (b *Bus) ensureStream(ctx context.Context) error {
	if err := b.checkDeployment(ctx, b.cfg.Stream, "stream"); err != nil {
		return err
	}
	_, err := b.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        b.cfg.Stream,
		Description: "corral events",
		Subjects:    []string{b.durablePrefix() + ">"},
		Storage:     b.cfg.storage(),
		Replicas:    b.cfg.Replicas,
		MaxAge:      b.cfg.MaxAge,
		Discard:     jetstream.DiscardOld,
		Duplicates:  2 * time.Minute,
		Metadata:    b.deploymentMetadata(),
	})
	if overlap(err) {
		return fault.Wrap(fault.Validation, err, "nats connect",
			"stream %s: another stream already stores subjects of subject_prefix %q", b.cfg.Stream, b.cfg.SubjectPrefix)
	}
	if err != nil {
		return fault.Wrap(fault.NotAvailable, err, "nats connect", "stream %s", b.cfg.Stream)
	}
	return nil
}

// prefixMetadata is the key, in the metadata of the event stream and of
// the lease bucket, of the subject prefix of the deployment they serve.
const prefixMetadata = "corral_subject_prefix"

func (b *Bus) deploymentMetadata() map[string]string {
	return map[string]string{prefixMetadata: b.cfg.SubjectPrefix}
}

// checkDeployment refuses the stream name (the event stream, or the
// stream of the lease bucket) when it serves another deployment: another
// subject prefix. Updating it would take another deployment's stream over
// or share its leases and session records. A stream that names no prefix
// (made before the metadata was kept) serves the prefix its subjects
// name, or any when they name none of the bus's.
func (b *Bus) checkDeployment(ctx context.Context, name, setting string) error {
	st, err := b.js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fault.Wrap(fault.NotAvailable, err, "nats connect", "%s %s", setting, name)
	}
	cfg := st.CachedInfo().Config
	prefix, ok := cfg.Metadata[prefixMetadata]
	if !ok && setting == "stream" {
		for _, subj := range cfg.Subjects {
			prefix, ok = strings.CutSuffix(subj, ".ev.>")
		}
	}
	if ok && prefix != b.cfg.SubjectPrefix {
		return fault.New(fault.Validation, "nats connect", "%s %s serves the deployment of subject_prefix %q, not %q: give each deployment its own stream and lease_bucket",
			setting, strings.TrimPrefix(name, "KV_"), prefix, b.cfg.SubjectPrefix)
	}
	return nil
}

// restoreStream makes the event stream again when a publish that failed
// with err finds it gone: a server with storage: memory restarted. The
// publish is not told so by the server — the other nodes' inbound
// subscriptions take the subject, so it waits for an acknowledgement
// that never comes — so a publish that is not answered asks whether the
// stream exists.
func (b *Bus) restoreStream(ctx context.Context, err error) {
	if !missing(err) && !errors.Is(err, context.DeadlineExceeded) {
		return
	}
	if _, serr := b.js.Stream(ctx, b.cfg.Stream); errors.Is(serr, jetstream.ErrStreamNotFound) {
		_ = b.ensureStream(ctx)
	}
}

// missing reports whether err says that no stream took a publish: the
// stream does not exist (any more).
func missing(err error) bool {
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, natsgo.ErrNoResponders)
}

func overlap(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10065 // JSStreamSubjectOverlapErr
}

// oversize is the error of a message of n bytes on behalf of what (a
// subject, an exec id) that the server refused because it is larger than
// its max_payload, or nil when err is another error. Bad input, not an
// unreachable server: asking again cannot help.
func (b *Bus) oversize(err error, op, what string, n int) error {
	if !errors.Is(err, natsgo.ErrMaxPayload) {
		return nil
	}
	return fault.Wrap(fault.Validation, err, op, "%q is %d bytes, over the server's max_payload of %d",
		what, n, b.nc.MaxPayload())
}

// storedMsg is one message read back.
type storedMsg struct {
	subject string
	seq     uint64
	data    []byte
}

// lastMsg asks the leader of stream for the newest message on subject (a
// consistent read, where a direct get may be answered by a replica that
// lags); nil when there is none.
func (b *Bus) lastMsg(ctx context.Context, stream, subject string) (*storedMsg, error) {
	req, _ := json.Marshal(map[string]string{"last_by_subj": subject})
	reply, err := b.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Message *struct {
			Subject string `json:"subject"`
			Seq     uint64 `json:"seq"`
			Data    []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return nil, fault.Wrap(fault.Internal, err, "read stream "+stream, "the server's answer")
	}
	if resp.Error != nil {
		if resp.Error.Code == 404 {
			return nil, nil
		}
		return nil, fault.New(fault.NotAvailable, "read stream "+stream, "%s (%d)", resp.Error.Description, resp.Error.ErrCode)
	}
	if resp.Message == nil {
		return nil, nil
	}
	return &storedMsg{subject: resp.Message.Subject, seq: resp.Message.Seq, data: resp.Message.Data}, nil
}
