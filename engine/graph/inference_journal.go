package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/hostabi"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
)

// JournalFuncInference is the func name of the journal entries inference
// nodes record: model replies are non-deterministic inputs of a run, kept
// in its journal beside the host ABI calls so that a replay can feed them
// back.
const JournalFuncInference = "inference"

// InferenceArgs is the argument of an inference journal entry: which
// provider and model were asked, and a digest of the whole request
// (system prompt, messages, tools, tool choice, profile, intent,
// extensions), so that a replay can tell
// when a run asks something else than the recorded one.
type InferenceArgs struct {
	Provider string `json:"provider"`
	Model    string `json:"model,omitempty"`
	Profile  string `json:"profile,omitempty"`
	Stream   bool   `json:"stream,omitempty"`
	Messages int    `json:"messages"`
	Digest   string `json:"digest"`
}

// InferenceRecord is the result of an inference journal entry: the reply,
// the deltas in the order they were published, and the error of a failed
// call (then Message holds nothing and Deltas what was streamed).
type InferenceRecord struct {
	Message      *message.Message   `json:"message,omitempty"`
	FinishReason string             `json:"finish_reason,omitempty"`
	Usage        agent.Usage        `json:"usage"`
	Deltas       []DeltaRecord      `json:"deltas,omitempty"`
	Error        *hostabi.ErrorInfo `json:"error,omitempty"`
}

// DeltaRecord is one streamed delta of an InferenceRecord: text or a tool
// call.
type DeltaRecord struct {
	Text     string            `json:"text,omitempty"`
	ToolCall *message.ToolCall `json:"tool_call,omitempty"`
}

func deltaRecordOf(d model.Delta) DeltaRecord {
	r := DeltaRecord{Text: d.Text}
	if d.ToolCall != nil {
		c := *d.ToolCall
		r.ToolCall = &c
	}
	return r
}

// InferenceReplayer is a host capability (found with
// agent.CapabilityFromHost) of hosts that replay a recorded run: an
// inference node asks it for the recorded reply instead of calling its
// provider, and publishes the recorded deltas again.
type InferenceReplayer interface {
	// ReplayInference returns the next recorded reply of node. args is the
	// argument array the node would record; a replayer reports a run that
	// asks something else than the record as a Validation error naming the
	// node and the call.
	ReplayInference(node string, args json.RawMessage) (InferenceRecord, error)
}

// inferenceArgs is the argument array of a journal entry for req.
func inferenceArgs(provider string, stream bool, req model.Request) json.RawMessage {
	body, _ := json.Marshal(struct {
		Model      string            `json:"model"`
		System     string            `json:"system"`
		Messages   []message.Message `json:"messages"`
		Tools      any               `json:"tools"`
		ToolChoice string            `json:"tool_choice"`
		Profile    string            `json:"profile,omitempty"`
		Intent     *model.Intent     `json:"intent,omitempty"`
		Extensions []model.Extension `json:"extensions,omitempty"`
	}{req.Model, req.System, req.Messages, req.Tools, req.ToolChoice, req.Profile, intentOf(req), req.Extensions})
	sum := sha256.Sum256(body)
	args, _ := json.Marshal([]InferenceArgs{{Provider: provider, Model: req.Model, Profile: req.Profile, Stream: stream,
		Messages: len(req.Messages), Digest: "sha256:" + hex.EncodeToString(sum[:])}})
	return args
}

// intentOf is the intent a digest covers: nil for text only, so that the
// digests of text requests stay those recorded before intents existed.
func intentOf(req model.Request) *model.Intent {
	if req.Intent.IsTextOnly() {
		return nil
	}
	return &req.Intent
}

// journalInference records one call in j (nil records nothing).
func journalInference(j *hostabi.Journal, node string, args json.RawMessage, resp model.Response, deltas []DeltaRecord, err error) {
	if j == nil {
		return
	}
	rec := InferenceRecord{Usage: resp.Usage, Deltas: deltas}
	if err != nil {
		info := hostabi.ErrorInfoOf(err)
		rec.Error = &info
	} else {
		m := resp.Message.Clone()
		rec.Message, rec.FinishReason = &m, resp.FinishReason
	}
	res, mErr := json.Marshal(rec)
	if mErr != nil {
		return
	}
	j.Record(hostabi.Entry{Node: node, Func: JournalFuncInference, Args: args, Result: res})
}

// callJournal returns the journal of the call's run: the one its host ABI
// records into.
func callJournal(c *Call) *hostabi.Journal {
	if a, ok := c.ABI().(*lazyABI); ok {
		return a.rs.journal
	}
	return nil
}

// replay publishes the recorded deltas and returns the recorded reply or
// error.
func (r InferenceRecord) replay(_ context.Context, out *inferenceOutput) (model.Response, error) {
	for _, d := range r.Deltas {
		if err := out.delta(model.Delta{Text: d.Text, ToolCall: d.ToolCall}); err != nil {
			return model.Response{}, err
		}
	}
	resp := model.Response{FinishReason: r.FinishReason, Usage: r.Usage}
	if r.Error != nil {
		return resp, r.Error.Err()
	}
	if r.Message == nil {
		return resp, fault.New(fault.Validation, opInference, "replay: the record has neither a message nor an error")
	}
	resp.Message = r.Message.Clone()
	return resp, nil
}

// JournalReplay answers inference nodes from the inference entries of a
// recorded journal, node by node in the recorded order. Embed it in a
// replaying host (or return it from the host's capability search) to
// replay the model's replies. It is safe for concurrent use.
type JournalReplay struct {
	mu      sync.Mutex
	pending map[string][]hostabi.Entry
	calls   map[string]int
}

var _ InferenceReplayer = (*JournalReplay)(nil)

// NewJournalReplay returns a replayer of j's inference entries.
func NewJournalReplay(j *hostabi.Journal) *JournalReplay {
	r := &JournalReplay{pending: map[string][]hostabi.Entry{}, calls: map[string]int{}}
	for _, e := range j.Entries() {
		if e.Func == JournalFuncInference {
			r.pending[e.Node] = append(r.pending[e.Node], e)
		}
	}
	return r
}

// ReplayInference returns the next recorded reply of node. A node with no
// reply left, or whose request differs from the recorded one, is a
// Validation error naming the node and the call.
func (r *JournalReplay) ReplayInference(node string, args json.RawMessage) (InferenceRecord, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[node]++
	n := r.calls[node]
	queue := r.pending[node]
	if len(queue) == 0 {
		return InferenceRecord{}, fault.New(fault.Validation, "replay inference", "node %q call %d: the journal has no reply for it", node, n)
	}
	e := queue[0]
	r.pending[node] = queue[1:]
	if !jsonEqual(e.Args, args) {
		return InferenceRecord{}, fault.New(fault.Validation, "replay inference",
			"node %q call %d (journal entry %d): the run diverged: it asks %s, the journal recorded %s", node, n, e.Seq, args, e.Args)
	}
	var rec InferenceRecord
	if err := json.Unmarshal(e.Result, &rec); err != nil {
		return InferenceRecord{}, fault.Wrap(fault.Validation, err, "replay inference", "node %q call %d (journal entry %d)", node, n, e.Seq)
	}
	return rec, nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ax, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return string(ax) == string(by)
}

// TapeReplay answers inference nodes from a replaying journal
// (hostabi.NewReplayJournal): each reply is the node's next recorded
// input, which must be an inference entry with the same request digest,
// else the call is a *hostabi.DivergenceError. Return it from a replaying
// host's capability search (with the journal as its JournalProvider) and
// the graph engine replays a whole run from one recording: host calls,
// model replies and tool results.
type TapeReplay struct{ J *hostabi.Journal }

var _ InferenceReplayer = TapeReplay{}

// ReplayInference returns the recorded reply of node's next call.
func (r TapeReplay) ReplayInference(node string, args json.RawMessage) (InferenceRecord, error) {
	e, err := r.J.Answer(node, JournalFuncInference, args)
	if err != nil {
		return InferenceRecord{}, err
	}
	var rec InferenceRecord
	if err := json.Unmarshal(e.Result, &rec); err != nil {
		return InferenceRecord{}, fault.Wrap(fault.Validation, err, "replay inference", "node %q (journal entry %d)", node, e.Seq)
	}
	return rec, nil
}

// replayingJournal returns the host's journal when it replays a
// recording.
func replayingJournal(c *Call) (*hostabi.Journal, bool) {
	p, ok := agent.CapabilityFromHost[JournalProvider](c.Host)
	if !ok {
		return nil, false
	}
	j := p.Journal()
	return j, j.Replaying()
}

// replayTools answers a tool node's calls from the recording instead of
// running the tools: a replay never reaches a tool's network. The host
// calls the tools made when recorded are passed over (hostabi.Journal.Answer).
func replayTools(c *Call, j *hostabi.Journal, calls []message.ToolCall) ([]message.ToolResult, error) {
	var skip []string
	for _, f := range hostabi.Catalog() {
		skip = append(skip, f.Name)
	}
	out := make([]message.ToolResult, len(calls))
	for i, call := range calls {
		e, err := j.Answer(c.Node, ToolJournalFunc, toolCallArgs(call), skip...)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(e.Result, &out[i]); err != nil {
			return nil, fault.Wrap(fault.Validation, err, "replay tool", "node %q (journal entry %d)", c.Node, e.Seq)
		}
	}
	return out, nil
}

// JournalFuncInterrupt is the func name of the journal entry of an
// interrupt the engine took at a wave boundary (REF 5.2.2, 5.2.4): its
// node is the node the board names in __interrupted_node, its argument
// the boundary ("before_wave" or "after_wave"), its result the interrupt.
// Only an interrupt taken is recorded; a replay takes it at the same
// boundary of the same node, and sees no interrupt anywhere else.
const JournalFuncInterrupt = "interrupt"

// The boundaries of an interrupt entry.
const (
	boundaryBeforeWave = `["before_wave"]`
	boundaryAfterWave  = `["after_wave"]`
)

// pollInterrupt polls the run's interrupts at a wave boundary. A live run
// polls the latch and journals an interrupt it takes; a replaying run
// answers from its recording alone (TakeIf), so that an interrupted turn
// replays interrupted at the same point.
func (r *runState) pollInterrupt(node, boundary string) (agent.Interrupt, bool) {
	if r.journal.Replaying() {
		e, ok := r.journal.TakeIf(node, JournalFuncInterrupt)
		if !ok {
			return agent.Interrupt{}, false
		}
		var intr agent.Interrupt
		if e.Err != nil || json.Unmarshal(e.Result, &intr) != nil || intr.Cause == "" {
			intr = agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "replayed interrupt"}
		}
		r.journal.Record(e)
		return intr, true
	}
	intr, ok := r.latch.Poll(r.host.Interrupts())
	if ok {
		res, err := json.Marshal(intr)
		if err == nil {
			r.journal.Record(hostabi.Entry{Node: node, Func: JournalFuncInterrupt, Args: json.RawMessage(boundary), Result: res})
		}
	}
	return intr, ok
}
