package hostabi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"

	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/event"
	"github.com/corral-rt/corral/sandbox"
)

// CustomSegment is the segment under a run's subject that host.publish
// writes to: agent.run.<run>.custom.<suffix>.
const CustomSegment = "custom"

// PublishSubject returns the subject host.publish(suffix) writes to for
// run: agent.run.<run>.custom.<suffix>. The suffix must be a valid subject
// tail (no wildcards, no empty segments) and the whole subject at most
// event.MaxSubjectLen bytes; the error is of kind Validation.
func PublishSubject(run, suffix string) (string, error) {
	if err := event.ValidateSubject(suffix); err != nil {
		return "", err
	}
	subject := event.SubjectPrefixRun + event.SanitiseID(run) + "." + CustomSegment + "." + suffix
	if err := event.ValidateSubject(subject); err != nil {
		return "", err
	}
	return subject, nil
}

// callPublish publishes a custom event in the run's own namespace.
func callPublish(ctx context.Context, d *Dispatcher, argv []json.RawMessage) (json.RawMessage, error) {
	suffix, err := d.argString(FuncPublish, argv, 0, "subject suffix")
	if err != nil {
		return nil, err
	}
	subject, err := PublishSubject(d.cfg.Run.ID, suffix)
	if err != nil {
		return nil, d.argError(FuncPublish, 0, err, "subject suffix")
	}
	var payload json.RawMessage
	if raw := optArg(argv, 1); !isNull(raw) {
		payload = bytes.Clone(raw)
	}
	if err := d.publish(ctx, FuncPublish, subject, payload); err != nil {
		return nil, err
	}
	return jsonNull(), nil
}

// callEmit publishes a stream delta built from (type, payload) by the
// REF 5.4 mapping. A payload of the wrong shape for its type is
// skipped: nothing is published, the call returns null and the skip is
// logged.
func callEmit(ctx context.Context, d *Dispatcher, argv []json.RawMessage) (json.RawMessage, error) {
	typ, err := d.argString(FuncEmit, argv, 0, "type")
	if err != nil {
		return nil, err
	}
	if typ == "" {
		return nil, d.argError(FuncEmit, 0, nil, "type: must not be empty")
	}
	delta, err := EmitDelta(typ, optArg(argv, 1))
	if err == nil && d.cfg.ForkID != "" {
		delta.Speculative, delta.ForkID, delta.BranchID = true, d.cfg.ForkID, d.cfg.BranchID
	}
	if err == nil {
		err = delta.Validate()
	}
	if err != nil {
		d.logSkip(ctx, typ, err)
		return jsonNull(), nil
	}
	payload, err := d.encodeResult(FuncEmit, delta)
	if err != nil {
		return nil, err
	}
	subject := event.SubjectStreamDelta(d.cfg.Run.ID, event.Actor(d.cfg.Run.AgentID, d.cfg.Node))
	if err := d.publish(ctx, FuncEmit, subject, payload); err != nil {
		return nil, err
	}
	return jsonNull(), nil
}

// publish counts one event against MaxEvents and MaxEventBytes and
// publishes it with the run_id, agent_id and node_id headers.
func (d *Dispatcher) publish(ctx context.Context, f, subject string, payload json.RawMessage) error {
	if err := d.reserveEvent(int64(len(payload))); err != nil {
		return err
	}
	env, err := event.NewEnvelope(ctx, subject, payload)
	if err != nil {
		return d.argError(f, 0, err, "subject")
	}
	env.Headers = map[string]string{
		event.HeaderRunID:   d.cfg.Run.ID,
		event.HeaderAgentID: d.cfg.Run.AgentID,
		event.HeaderNodeID:  d.cfg.Node,
	}
	pub, _ := agent.CapabilityFromHost[agent.Publisher](d.cfg.Host)
	if err := pub.Publish(ctx, env); err != nil {
		return d.hostError(f, err)
	}
	return nil
}

// reserveEvent counts one event of n payload bytes, or refuses it past
// MaxEvents or MaxEventBytes.
func (d *Dispatcher) reserveEvent(n int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.events+1 > d.limits.MaxEvents {
		return d.limitError(sandbox.LimitEvents, int64(d.limits.MaxEvents))
	}
	if d.eventBytes+n > d.limits.MaxEventBytes {
		return d.limitError(sandbox.LimitEventBytes, d.limits.MaxEventBytes)
	}
	d.events++
	d.eventBytes += n
	return nil
}

// logSkip logs an emit skipped for a malformed payload: the first one of
// the node call as a warning, later ones at debug level, so that a script
// cannot flood the log.
func (d *Dispatcher) logSkip(ctx context.Context, typ string, err error) {
	d.mu.Lock()
	d.skips++
	first := d.skips == 1
	d.mu.Unlock()
	level := slog.LevelDebug
	if first {
		level = slog.LevelWarn
	}
	d.logger.Log(ctx, level, "host emit: delta skipped", "node", d.cfg.Node, "type", abbreviate(typ), "error", err)
}
