package serve

import (
	"context"
	"encoding/json"
	"fmt"
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
	}
	if err == nil {
		if last := msgs[len(msgs)-1]; last.Role != message.RoleUser && last.Role != message.RoleTool {
			err = fault.Wrap(fault.Validation, errNoUserMessage, "chat", "messages[%d]", len(msgs)-1)
		}
	}
	if err == nil {
		err = s.admit()
	}
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	te, release, err := s.startChatTurn(r, tenant, req.Model, msgs, req.Stream)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	defer release()
	// A client that goes away interrupts its turn.
	stop := context.AfterFunc(r.Context(), func() {
		_ = te.turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: "the client went away"})
	})
	defer stop()
	c := chatOut{id: "chatcmpl-" + te.turn.RunID(), created: te.started.Unix(), model: req.Model}
	if req.Stream {
		s.streamChat(w, r, te, c, req.StreamOptions != nil && req.StreamOptions.IncludeUsage)
		return
	}
	s.watch(te) // returns once the turn settled
	if err := turnError(te); err != nil {
		e := outcomeError(err)
		s.noteError(r, e)
		writeErrorHeaders(w, e)
		writeJSON(w, e.status, openAIErrorOf(e))
		return
	}
	writeJSON(w, http.StatusOK, c.completion(te.res))
}

// startChatTurn opens the turn's session, starts the turn and returns a
// release that closes the session once the turn settled (and removes an
// ephemeral one at once).
func (s *Server) startChatTurn(r *http.Request, tenant, agentID string, msgs []message.Message, stream bool) (*turnEntry, func(), error) {
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
	} else if err := key.Validate(); err != nil {
		return nil, nil, fault.Wrap(fault.Validation, err, "chat", "header %s", HeaderContextID)
	}
	mgr := s.rt.Sessions()
	lease, err := mgr.Open(r.Context(), key)
	if err != nil {
		return nil, nil, err
	}
	release := func() {
		_ = lease.Close()
		if cfg.Ephemeral {
			_ = mgr.DeleteSession(s.cleanupCtx(), key)
		}
	}
	te, err := s.startTurn(r.Context(), lease.Session(), turnSpec{tenant: tenant,
		req: agent.Request{Message: msgs[len(msgs)-1]}, cfg: cfg, unstreamed: !stream})
	if err != nil {
		release()
		return nil, nil, err
	}
	return te, func() { te.wait(context.Background()); release() }, nil
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

// finishReason is "tool_calls" when the output's last message calls
// tools, "stop" otherwise.
func finishReason(res *agent.Result) string {
	if len(finalToolCalls(res)) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// completion is the whole answer: the text of the output and, when the
// output ends with tool calls for the client to run, those calls.
func (c chatOut) completion(res *agent.Result) chatObject {
	text := outputText(res.Output)
	m := &chatOutMessage{Role: "assistant", Content: &text, ToolCalls: finalToolCalls(res)}
	fr := finishReason(res)
	u := usageOf(res.Usage)
	return chatObject{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices: []chatChoice{{Message: m, FinishReason: &fr}}, Usage: &u}
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

func (c chatOut) chunk(delta *chatDelta, finish *string) chatObject {
	ch := chatChoice{Delta: delta, FinishReason: finish}
	if delta == nil {
		ch.Delta = &chatDelta{}
	}
	return chatObject{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: []chatChoice{ch}}
}

// streamChat streams the turn as chat completion chunks: the role, each
// text delta, the tool calls left to the client, the finish, the usage
// when asked, then [DONE]. A turn that does not complete ends the stream with an error
// object in OpenAI's shape before [DONE]. Each write is bounded by
// Options.StreamWriteTimeout: a client that stops reading loses the
// stream.
func (s *Server) streamChat(w http.ResponseWriter, r *http.Request, te *turnEntry, c chatOut, withUsage bool) {
	flusher, _ := w.(http.Flusher)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_ = rc.SetWriteDeadline(time.Now().Add(s.opts.StreamWriteTimeout))
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	}
	empty := ""
	if send(c.chunk(&chatDelta{Role: "assistant", Content: &empty}, nil)) != nil {
		return
	}
	err := te.log.follow(r.Context(), 0, func(_ int, ev streamEvent) error {
		if ev.typ != evDelta || ev.delta == nil || ev.delta.Part == nil {
			return nil
		}
		if p := ev.delta.Part; p.Type == message.PartText && p.Text != "" {
			text := p.Text
			return send(c.chunk(&chatDelta{Content: &text}, nil))
		}
		return nil
	})
	if err != nil || !te.wait(r.Context()) {
		return // the client went away
	}
	if terr := turnError(te); terr != nil {
		e := outcomeError(terr)
		s.noteError(r, e)
		_ = send(openAIErrorOf(e))
	} else {
		if calls := finalToolCalls(te.res); len(calls) > 0 {
			_ = send(c.chunk(&chatDelta{ToolCalls: calls}, nil))
		}
		fr := finishReason(te.res)
		_ = send(c.chunk(nil, &fr))
		if withUsage {
			u := usageOf(te.res.Usage)
			_ = send(chatObject{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
				Choices: []chatChoice{}, Usage: &u})
		}
	}
	_ = rc.SetWriteDeadline(time.Now().Add(s.opts.StreamWriteTimeout))
	_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}
