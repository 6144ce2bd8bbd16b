package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// chatCompletions runs a turn of the model's agent for an OpenAI chat
// completion request and answers with its output, whole or streamed.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r.Context())
	req, msgs, err := decodeChatRequest(r.Body)
	if err == nil {
		_, err = s.agentOf(tenant, req.Model)
		err = withParam("model", err)
	}
	if err == nil {
		if last := msgs[len(msgs)-1]; last.Role != message.RoleUser && last.Role != message.RoleTool {
			err = withParam("messages", fault.Wrap(fault.Validation, errNoUserMessage, "chat", "messages[%d]", len(msgs)-1))
		}
	}
	if err == nil {
		err = s.admit()
	}
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	hold, err := s.startChatTurn(r, tenant, req.Model, msgs, req.Stream)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	defer hold.release()
	te := hold.te
	c := chatOut{id: "chatcmpl-" + te.turn.RunID(), created: te.started.Unix(), model: req.Model}
	if req.Stream {
		// A client that goes away interrupts its turn.
		stop := context.AfterFunc(r.Context(), func() { interruptGone(te) })
		defer stop()
		s.streamChat(w, r, te, c, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	// The request's goroutine watches its turn; a client that goes away
	// first interrupts it.
	if _, err := te.turn.Wait(r.Context()); err != nil && r.Context().Err() != nil {
		interruptGone(te)
	}
	s.watch(te) // returns once the turn settled
	if err := turnError(te); err != nil {
		e := outcomeError(err)
		s.noteError(r, e)
		writeErrorHeaders(w, e)
		writeJSON(w, e.status, openAIErrorOf(e))
		return
	}
	writeJSON(w, http.StatusOK, &c.completion(te.res).obj)
}

// interruptGone interrupts the turn of a client that went away.
func interruptGone(te *turnEntry) {
	_ = te.turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "the client went away"})
}

// chatHold is what a chat completion holds while its turn runs: the
// session's lease and the session's place in the tenant's share.
type chatHold struct {
	s         *Server
	te        *turnEntry // nil until the turn started
	lease     *session.Lease
	key       session.Key
	ephemeral bool
	place     place
}

// release waits for the turn to settle, closes the session (and removes
// an ephemeral one at once) and gives its place back.
func (h *chatHold) release() {
	if h.te != nil {
		h.te.wait(context.Background())
	}
	_ = h.lease.Close()
	if h.ephemeral {
		_ = h.s.rt.Sessions().DeleteSession(h.s.cleanupCtx(), h.key)
	}
	h.place.release()
}

// startChatTurn opens the turn's session and starts the turn; the
// returned hold's release closes the session once the turn settled.
func (s *Server) startChatTurn(r *http.Request, tenant, agentID string, msgs []message.Message, stream bool) (*chatHold, error) {
	cfg := session.StartConfig{AskUser: func(context.Context, agent.UserPrompt) (agent.UserReply, error) {
		return agent.UserReply{Parts: []message.Part{message.TextPart("")}}, nil
	}}
	key := session.Key{AgentID: agentID, ContextID: r.Header.Get(HeaderContextID)}
	if key.ContextID == "" {
		key.ContextID = newID("chat_")
		cfg.Ephemeral = true
		if len(msgs) > 1 {
			cfg.History = agent.NewBoard()
			cfg.History.Append(agent.MainChannel, msgs[:len(msgs)-1]...)
		}
	} else if err := checkChatContextID(key); err != nil {
		return nil, err
	}
	p, err := s.reserveChatSession(tenant, key) // the tenant's share (REF 11.1.11)
	if err != nil {
		return nil, err
	}
	lease, err := s.rt.Sessions().Open(r.Context(), key)
	if err != nil {
		p.release()
		return nil, err
	}
	hold := &chatHold{s: s, lease: lease, key: key, ephemeral: cfg.Ephemeral, place: p}
	te, err := s.startTurn(r.Context(), lease.Session(), turnSpec{tenant: tenant,
		req: agent.Request{Message: msgs[len(msgs)-1]}, cfg: cfg, unstreamed: !stream, textOnly: stream})
	if err != nil {
		hold.release()
		return nil, err
	}
	hold.te = te
	return hold, nil
}

// turnError is the error of a settled turn that did not complete.
func turnError(te *turnEntry) error { return outcomeOf(te.res, te.err) }

// outcomeOf is the error of a turn that settled with res and err, nil
// when it completed.
func outcomeOf(res *agent.Result, err error) error {
	if err != nil {
		return err
	}
	if res == nil {
		return fault.New(fault.Internal, "chat", "the turn settled without a result")
	}
	if res.Status == agent.StatusCompleted {
		return nil
	}
	if res.Err != nil {
		return res.Err
	}
	kind := fault.Internal
	if res.Status == agent.StatusInterrupted {
		kind = fault.Interrupted
	}
	return fault.New(kind, "chat", "the turn ended %s", res.Status)
}

// outcomeError is the error of a turn that ran and did not complete: a
// quota the turn passed is 429, as a refusal; any other limit the turn hit
// is the turn's failure, 500, not a reason for the client to retry later.
func outcomeError(err error) apiError {
	e := errorOf(err)
	e.inRun = true
	if e.status == http.StatusTooManyRequests && e.quota == "" {
		e.status, e.retryAfter = http.StatusInternalServerError, 0
	}
	return e
}

// chatOut builds the response objects of one completion.
type chatOut struct {
	id      string
	created int64
	model   string
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

func usageOf(u agent.Usage) chatUsage {
	total := u.TotalTokens
	if total == 0 {
		total = u.InputTokens + u.OutputTokens
	}
	return chatUsage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: total}
}

type chatOutMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

// chatDelta is the delta of a chunk: only what it adds.
type chatDelta struct {
	Role      string         `json:"role,omitempty"`
	Content   *string        `json:"content,omitempty"`
	ToolCalls []chatToolCall `json:"tool_calls,omitempty"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatOutMessage `json:"message,omitempty"`
	Delta        *chatDelta      `json:"delta,omitempty"`
	FinishReason *string         `json:"finish_reason"`
}

type chatObject struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage,omitempty"`
}

// finishOf is the finish reason of an output whose last message calls
// the tools of calls: "tool_calls" when it calls any, "stop" otherwise.
func finishOf(calls []chatToolCall) string {
	if len(calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// chatAnswer is a whole answer and what its object points to, held
// together so that building one is one allocation.
type chatAnswer struct {
	obj     chatObject
	choices [1]chatChoice
	msg     chatOutMessage
	text    string
	finish  string
	usage   chatUsage
}

// completion is the whole answer: the text of the output and, when the
// output ends with tool calls for the client to run, those calls. Its obj
// is what is sent.
func (c chatOut) completion(res *agent.Result) *chatAnswer {
	calls := finalToolCalls(res)
	a := &chatAnswer{text: outputText(res.Output), finish: finishOf(calls), usage: usageOf(res.Usage)}
	a.msg = chatOutMessage{Role: "assistant", Content: &a.text, ToolCalls: calls}
	a.choices[0] = chatChoice{Message: &a.msg, FinishReason: &a.finish}
	a.obj = chatObject{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices: a.choices[:], Usage: &a.usage}
	return a
}

// finalToolCalls are the tool calls of the output's last message, indexed
// from 0: the calls the agent leaves to the client. Calls the agent made
// and answered itself during the turn are not surfaced.
func finalToolCalls(res *agent.Result) []chatToolCall {
	if len(res.Output) == 0 {
		return nil
	}
	var out []chatToolCall
	for i, tc := range res.Output[len(res.Output)-1].ToolCalls() {
		out = append(out, wireToolCall(tc, &i))
	}
	return out
}

func wireToolCall(tc message.ToolCall, index *int) chatToolCall {
	out := chatToolCall{Index: index, ID: tc.ID, Type: "function"}
	out.Function.Name, out.Function.Arguments = tc.Name, tc.Arguments
	return out
}

// chatStream writes the chunks of one streamed completion as server-sent
// events, each write bounded by Options.StreamWriteTimeout. It reuses one
// buffer and one chunk for every event.
type chatStream struct {
	w       http.ResponseWriter
	rc      http.ResponseController // held by value: one allocation less
	flusher http.Flusher
	timeout time.Duration
	buf     bytes.Buffer
	enc     *json.Encoder // into buf
	chunk   chatObject    // its Choices are choice
	choice  [1]chatChoice
	delta   chatDelta
	text    string
}

func newChatStream(w http.ResponseWriter, c chatOut, timeout time.Duration) *chatStream {
	cs := &chatStream{w: w, rc: *http.NewResponseController(w), timeout: timeout}
	cs.flusher, _ = w.(http.Flusher)
	cs.enc = json.NewEncoder(&cs.buf) // escaping HTML as json.Marshal does
	cs.chunk = chatObject{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: cs.choice[:]}
	return cs
}

// send writes and sends v as one event.
func (cs *chatStream) send(v any) error {
	if err := cs.put(v); err != nil {
		return err
	}
	return cs.flush()
}

// put writes v as one event, "data: ", v's JSON and a blank line, to be
// sent at the next flush.
func (cs *chatStream) put(v any) error {
	cs.buf.Reset()
	cs.buf.WriteString("data: ")
	if err := cs.enc.Encode(v); err != nil { // its JSON and a line break
		return err
	}
	cs.buf.WriteByte('\n')
	_ = cs.rc.SetWriteDeadline(time.Now().Add(cs.timeout))
	_, err := cs.w.Write(cs.buf.Bytes())
	return err
}

// flush sends what was written, bounded by the stream's timeout.
func (cs *chatStream) flush() error {
	if cs.flusher == nil {
		return nil
	}
	_ = cs.rc.SetWriteDeadline(time.Now().Add(cs.timeout))
	cs.flusher.Flush()
	return nil
}

// sendChunk sends a chunk of delta that finishes with finish, when it is
// not nil.
func (cs *chatStream) sendChunk(delta chatDelta, finish *string) error {
	cs.delta = delta
	cs.choice[0] = chatChoice{Delta: &cs.delta, FinishReason: finish}
	return cs.send(&cs.chunk)
}

// putText writes a chunk of text, to be sent at the next flush.
func (cs *chatStream) putText(text string) error {
	cs.text = text
	cs.delta = chatDelta{Content: &cs.text}
	cs.choice[0] = chatChoice{Delta: &cs.delta}
	return cs.put(&cs.chunk)
}

// sseDone is the last event of a streamed completion.
var sseDone = []byte("data: [DONE]\n\n")

// streamChat streams the turn as chat completion chunks: the role, each
// text delta, the tool calls left to the client, the finish, the usage
// when asked, then [DONE]. A turn that does not complete ends the stream with an error
// object in OpenAI's shape before [DONE]. Each write is bounded by
// Options.StreamWriteTimeout: a client that stops reading loses the
// stream.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, te *turnEntry, c chatOut, withUsage bool) {
	h := w.Header()
	h["Content-Type"], h["Cache-Control"], h["X-Accel-Buffering"] = headerSSE, headerNoCache, headerNo
	w.WriteHeader(http.StatusOK)
	cs := newChatStream(w, c, s.opts.StreamWriteTimeout)
	if cs.sendChunk(chatDelta{Role: "assistant", Content: &cs.text}, nil) != nil { // the role, with empty content
		return
	}
	var lost error // the log lost deltas: the stream does not finish "stop" (REF 11.2.9)
	err := te.log.followFlushing(r.Context(), 0, func(_ int, ev streamEvent) error {
		if ev.typ == evOverflow {
			lost = overflowOf(ev)
		}
		if ev.typ != evDelta || ev.delta == nil || ev.delta.Part == nil {
			return nil
		}
		if p := ev.delta.Part; p.Type == message.PartText && p.Text != "" {
			return cs.putText(p.Text)
		}
		return nil
	}, cs.flush)
	if err != nil || !te.wait(r.Context()) {
		return // the client went away
	}
	if terr := streamOutcome(te, lost); terr != nil {
		e := outcomeError(terr)
		s.noteError(r, e)
		_ = cs.send(openAIErrorOf(e))
	} else {
		calls := finalToolCalls(te.res)
		if len(calls) > 0 {
			_ = cs.sendChunk(chatDelta{ToolCalls: calls}, nil)
		}
		fr := finishOf(calls)
		_ = cs.sendChunk(chatDelta{}, &fr)
		if withUsage {
			u := usageOf(te.res.Usage)
			_ = cs.send(chatObject{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
				Choices: []chatChoice{}, Usage: &u})
		}
	}
	_ = cs.rc.SetWriteDeadline(time.Now().Add(cs.timeout))
	if _, err := w.Write(sseDone); err == nil {
		_ = cs.flush()
	}
}
