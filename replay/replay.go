package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/deploy"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
	"github.com/corral-rt/corral/sandbox"
)

// Config is what Replay runs a recording against.
type Config struct {
	// Document is the deployment document to replay against: the recorded
	// one or a changed one. Required.
	Document *deploy.Document
	// NewBuilder returns the builder of the runtime (builtin.NewBuilder in
	// a program). Required. Replay adds its own host decorator
	// (Builder.WithHostFactory), so the builder must not have one.
	NewBuilder func() *runtime.Builder
	// Fork, when above 0, replays a fork (Fork): inputs numbered above it
	// answer the call of their function whatever it asks.
	fork int
}

// Report is the outcome of a replay.
type Report struct {
	RunID string `json:"run_id"`
	// Identical is true when the replay took exactly the recorded inputs
	// and published the recorded events, wrote the recorded board and
	// ended with the recorded result, byte for byte.
	Identical bool `json:"identical"`
	// Divergence is the first difference; nil when Identical.
	Divergence *Divergence `json:"divergence,omitempty"`
	// Changed lists the files whose digest differs from the recording's
	// (when the document's digests were given to Replay).
	Changed []string `json:"changed,omitempty"`
	// Got is what the replay did, as a recording.
	Got *Recording `json:"-"`
}

// Divergence is where a replay first differed from its recording.
type Divergence struct {
	// What differed: "input" (the run asked for an input the recording
	// does not hold at that point), "unused_input" (the run never asked for
	// a recorded input), "event", "board" or "result".
	What string `json:"what"`
	Node string `json:"node,omitempty"`
	// Where is the script position ("file:line:col") of the call that
	// diverged, when the script engine can tell it; for a WebAssembly
	// node, which has none, "module <file>" names its module.
	Where string `json:"where,omitempty"`
	// Call is the node's input number (for "input" and "unused_input"),
	// Func the host function; Index the position of the event or board
	// write in the recording (from 0).
	Call int `json:"call,omitempty"`
	// HostCall is, for what "input", the call's number among all the host
	// ABI calls of the node's run (emit, log and board calls included),
	// from 1; 0 when no host ABI call asked (a model reply, a tool result,
	// an interrupt at a wave boundary).
	HostCall int    `json:"host_call,omitempty"`
	Func     string `json:"func,omitempty"`
	Index    int    `json:"index,omitempty"`
	// Expected and Got are the recorded and the replayed values (absent
	// when there was none).
	Expected json.RawMessage `json:"expected,omitempty"`
	Got      json.RawMessage `json:"got,omitempty"`
	// Diff lists the paths where Expected and Got differ, with both
	// values.
	Diff []string `json:"diff,omitempty"`
}

// String says where the divergence is, in one line.
func (d *Divergence) String() string {
	s := Printable(d.What)
	if d.Node != "" {
		s += " at node " + Printable(d.Node)
	}
	if d.Call > 0 {
		s += fmt.Sprintf(" call %d", d.Call)
	}
	switch {
	case d.Func != "" && d.HostCall > 0:
		s += fmt.Sprintf(" (%s; host call %d)", Printable(d.Func), d.HostCall)
	case d.Func != "":
		s += " (" + Printable(d.Func) + ")"
	}
	if d.What == "event" || d.What == "board" {
		s += fmt.Sprintf(" #%d", d.Index)
	}
	if d.Where != "" {
		s += " at " + Printable(d.Where)
	}
	return s
}

// Replay re-runs the recorded turn against cfg.Document, the recording
// answering every outside input: no model, tool, clock, random source or
// person is asked, and an input the recording does not hold fails the run
// closed. It then compares the inputs taken, the events, the board writes
// and the result with the recording's. An error is a replay that could not
// run (a bad document, an agent the document lacks); a run that diverged
// is a Report with Identical false.
func Replay(ctx context.Context, rec *Recording, cfg Config) (*Report, error) {
	const op = "replay"
	if rec == nil || cfg.Document == nil || cfg.NewBuilder == nil {
		return nil, fault.New(fault.Validation, op, "a recording, a document and a builder are required")
	}
	if rec.Header.Truncated {
		return nil, fault.New(fault.Validation, op,
			"the recording of run %s is truncated: its recorder stopped keeping the turn's events and board writes at its per-turn bound (RecorderConfig.MaxTurnBytes), so it cannot be replayed; record the turn again with a larger bound",
			Printable(clip(rec.Header.RunID)))
	}
	journal := hostabi.NewReplayJournal(rec.entries())
	if cfg.fork > 0 {
		journal = hostabi.NewForkJournal(rec.entries(), cfg.fork)
	}
	var mu syncTap
	b := cfg.NewBuilder()
	err := b.WithHostFactory(func(next session.HostFactory) (session.HostFactory, error) {
		return func(ctx context.Context, req session.HostRequest) (agent.Host, error) {
			h, err := next(ctx, req)
			if err != nil || req.RunID != rec.Header.RunID {
				return h, err // only the replayed turn answers from the recording
			}
			t := &tap{Host: h, runID: req.RunID, journal: journal}
			if cfg.fork == 0 { // a fork's events differ from its parent's by design
				t.check = eventCheck(rec.Events)
			}
			mu.set(t, rec.Header.RunID)
			return replayHost{t}, nil
		}, nil
	})
	if err != nil {
		return nil, err
	}
	doc, err := offline(cfg.Document)
	if err != nil {
		return nil, err
	}
	rt, err := b.Build(ctx, doc)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	key := session.Key{AgentID: rec.Header.Agent, ContextID: rec.Header.Context}
	lease, err := rt.Sessions().Open(ctx, key)
	if err != nil {
		return nil, err
	}
	defer lease.Close()
	req := rec.Header.Request.Clone()
	sc := session.StartConfig{RunID: rec.Header.RunID, AskUser: askNothing, Steer: undrainedSteer(rec.Result)}
	if st := rec.Header.Start; st != nil { // the turn began with history, or resumed
		sc.History, sc.ResumeFrom = st.History, st.Resume
	}
	turn, err := lease.Session().StartWithConfig(ctx, req, sc)
	if err != nil {
		return nil, err
	}
	res, waitErr := turn.Wait(ctx)
	t := mu.get()
	if t == nil {
		return nil, fault.New(fault.Internal, op, "the turn built no host")
	}
	events, boards := t.transcript()
	got := &Recording{Header: rec.Header, Inputs: inputsOf(journal.Entries()), Events: events, Boards: boards,
		Result: outcomeOf(res, waitErr)}
	got.Header.Parent = nil
	rep := &Report{RunID: rec.Header.RunID, Got: got}
	rep.Divergence = compare(rec, got, journal, runError(res, waitErr))
	rep.Identical = rep.Divergence == nil
	if d := rep.Divergence; d != nil && cfg.Document.File() != "" {
		base, file := cfg.Document.BaseDir(), filepath.Base(cfg.Document.File())
		if d.Where != "" {
			d.Where = fileWhere(d.Where, scriptFiles(base, file))
		} else if f, ok := moduleFiles(base, file)[d.Node]; ok && d.Node != "" {
			d.Where = "module " + f // wasm: no script position
		}
	}
	return rep, nil
}

// undrainedSteer returns as many steer messages as the recorded turn left
// undrained (its result's session.pending_steer): the session counts them
// as the turn settles, and a replay, whose drainSteer calls answer from the
// recording, leaves them in its queue as the recorded turn did. Their text
// was never read by the run and is not recorded.
func undrainedSteer(out *Outcome) []message.Message {
	if out == nil || len(out.State) == 0 {
		return nil
	}
	var state map[string]json.RawMessage
	if json.Unmarshal(out.State, &state) != nil {
		return nil
	}
	var n int
	if json.Unmarshal(state[session.StatePendingSteer], &n) != nil || n <= 0 {
		return nil
	}
	msgs := make([]message.Message, min(n, session.MaxSteerQueue))
	for i := range msgs {
		msgs[i] = message.NewTextMessage(message.RoleUser, "(an undrained steer message; its text is not recorded)")
	}
	return msgs
}

// askNothing answers a prompt no recorded input answered: a replay never
// asks a person.
func askNothing(context.Context, agent.UserPrompt) (agent.UserReply, error) {
	return agent.UserReply{}, fault.New(fault.NotAvailable, "replay", "a replay asks no one: the prompt's answer is not in the recording")
}

func runError(res *agent.Result, err error) error {
	if err != nil {
		return err
	}
	if res != nil {
		return res.Err
	}
	return nil
}

// offline returns a copy of doc whose runtime keeps no checkpoints and
// resumes nothing from a store: a replay starts from the recorded start
// (or an empty history) and writes
// nothing to the document's stores.
func offline(doc *deploy.Document) (*deploy.Document, error) {
	out := *doc
	if len(doc.Runtime) == 0 {
		return &out, nil
	}
	var rt map[string]any
	if err := json.Unmarshal(doc.Runtime, &rt); err != nil {
		return nil, fault.Wrap(fault.Validation, err, "replay", "the document's runtime section")
	}
	delete(rt, "checkpoint_store")
	if s, ok := rt["sessions"].(map[string]any); ok {
		delete(s, "resume")
	}
	raw, err := json.Marshal(rt)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "replay", "")
	}
	out.Runtime = raw
	return &out, nil
}

// whereOf finds the script position of the call whose error err is.
func whereOf(err error) string {
	var hc *sandbox.HostCallError
	if errors.As(err, &hc) {
		return hc.Where
	}
	var se *sandbox.ScriptError
	if errors.As(err, &se) {
		return se.Where
	}
	return ""
}
