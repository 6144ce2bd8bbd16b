package serve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// turnRequest is the body of POST .../turns: the user's message as text
// or as a message, and optional inputs and metadata.
type turnRequest struct {
	Text     string            `json:"text,omitempty"`
	Message  *message.Message  `json:"message,omitempty"`
	Inputs   map[string]any    `json:"inputs,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// decodeTurnRequest reads a turn's body: exactly one of text and message,
// and a valid message.
func decodeTurnRequest(r io.Reader) (agent.Request, error) {
	var tr turnRequest
	if err := decodeJSON(r, &tr, true); err != nil {
		return agent.Request{}, err
	}
	m, err := userMessage(tr.Text, tr.Message, "start turn")
	if err != nil {
		return agent.Request{}, err
	}
	return agent.Request{Message: m, Inputs: tr.Inputs, Metadata: tr.Metadata}, nil
}

// userMessage is text as a user message, or msg; exactly one must be set.
func userMessage(text string, msg *message.Message, op string) (message.Message, error) {
	switch {
	case text != "" && msg != nil:
		return message.Message{}, fault.New(fault.Validation, op, "give text or message, not both")
	case msg != nil:
		if err := msg.Validate(); err != nil {
			return message.Message{}, fault.Wrap(fault.Validation, err, op, "message")
		}
		return *msg, nil
	case text != "":
		return message.NewTextMessage(message.RoleUser, text), nil
	}
	return message.Message{}, fault.New(fault.Validation, op, "text or message is required")
}

func (s *Server) startNativeTurn(w http.ResponseWriter, r *http.Request) {
	e, err := s.session(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := decodeTurnRequest(r.Body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	te, err := s.startTurn(r.Context(), e.lease.Session(), turnSpec{tenant: e.tenant, req: req,
		onStart: func(te *turnEntry) { e.addTurn(te, s.opts.KeepTurns) }})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, te.view())
}

// turn finds the request's {tid} in its tenant's session {sid}.
func (s *Server) turn(r *http.Request) (*turnEntry, error) {
	e, err := s.session(r)
	if err != nil {
		return nil, err
	}
	te, ok := e.findTurn(r.PathValue("tid"))
	if !ok {
		return nil, fault.New(fault.NotFound, "serve", "turn %q not found in session %q", r.PathValue("tid"), e.id)
	}
	return te, nil
}

func (s *Server) listTurns(w http.ResponseWriter, r *http.Request) {
	e, err := s.session(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e.mu.Lock()
	turns := append([]*turnEntry(nil), e.turns...)
	e.mu.Unlock()
	out := make([]turnView, 0, len(turns))
	for _, te := range turns {
		out = append(out, te.view())
	}
	writeJSON(w, http.StatusOK, map[string]any{"turns": out})
}

func (s *Server) getTurn(w http.ResponseWriter, r *http.Request) {
	te, err := s.turn(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, te.view())
}

// waitTurn waits until the turn settles, at most ?timeout= (a Go
// duration, bounded by Options.MaxWait), and shows it as it is then.
func (s *Server) waitTurn(w http.ResponseWriter, r *http.Request) {
	te, err := s.turn(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d := s.opts.MaxWait
	if q := r.URL.Query().Get("timeout"); q != "" {
		v, err := time.ParseDuration(q)
		if err != nil || v < 0 {
			s.writeError(w, r, fault.New(fault.Validation, "wait", "timeout %q is not a duration such as 30s", q))
			return
		}
		d = min(v, d)
	}
	select {
	case <-te.done: // settled: nothing to hold
	default:
		if d == 0 {
			break
		}
		release, err := s.hold(tenantOf(r.Context()))
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		defer release()
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		te.wait(ctx)
	}
	writeJSON(w, http.StatusOK, te.view())
}

// lastEventID reads where a stream resumes: the Last-Event-ID header, or
// the after query parameter; 0 is the start.
func lastEventID(r *http.Request) (int, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || strings.TrimLeft(v, "0123456789") != "" { // digits only: an id this server wrote

		return 0, fault.New(fault.Validation, "stream", "Last-Event-ID %q is not an event id", v)
	}
	return n, nil
}

// streamTurn streams the turn's events as server-sent events, from the
// start or after Last-Event-ID, until the end event. A turn whose log was
// freed is 410; past Options.MaxStreamsPerTurn open streams, 429.
func (s *Server) streamTurn(w http.ResponseWriter, r *http.Request) {
	te, err := s.turn(r)
	var after int
	if err == nil {
		after, err = lastEventID(r)
	}
	if err == nil && te.log.isFreed() {
		s.writeStatusError(w, r, http.StatusGone, fault.New(fault.NotAvailable, "stream",
			"the events of turn %q were freed to keep the tenant's turns within their event budget; its result is kept", te.turn.RunID()))
		return
	}
	if err == nil {
		if n, closed := te.log.length(); !closed && after > n { // REF 11.8.11
			err = fault.New(fault.Validation, "stream", "Last-Event-ID %d was never sent: the turn's last event is %d", after, n)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if n := te.streams.Add(1); int(n) > s.opts.MaxStreamsPerTurn {
		te.streams.Add(-1)
		s.writeStatusError(w, r, http.StatusTooManyRequests, fault.New(fault.RateLimit, "stream",
			"turn %q already has %d open streams", te.turn.RunID(), s.opts.MaxStreamsPerTurn))
		return
	}
	defer te.streams.Add(-1)
	release, err := s.hold(tenantOf(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer release()
	s.sse(w, r, te, after)
}

// writeStatusError answers a native request with err and status.
func (s *Server) writeStatusError(w http.ResponseWriter, r *http.Request, status int, err error) {
	e := errorOf(err)
	e.status = status
	s.noteError(r, e)
	writeErrorHeaders(w, e)
	writeJSON(w, e.status, nativeError{Error: nativeErrorBody{Kind: e.kind, Message: e.message}})
}

// sse writes te's log after id after to w as server-sent events. Each
// event's write is bounded by Options.StreamWriteTimeout, so that a
// client that stops reading ends its stream instead of holding it.
func (s *Server) sse(w http.ResponseWriter, r *http.Request, te *turnEntry, after int) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	buf := make([]byte, 0, 256)
	_ = te.log.follow(r.Context(), after, func(id int, ev streamEvent) error {
		_ = rc.SetWriteDeadline(time.Now().Add(s.opts.StreamWriteTimeout))
		buf = append(buf[:0], "id: "...)
		buf = strconv.AppendInt(buf, int64(id), 10)
		buf = append(buf, "\nevent: "...)
		buf = append(buf, ev.typ...)
		buf = append(buf, "\ndata: "...)
		buf = append(buf, ev.data...)
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return err
		}
		return rc.Flush()
	})
}

// getRecording answers with the turn's recording (docs/replay.md), once
// Options.Recordings keeps it: 404 without recordings, for a turn whose
// recording was forgotten and for another tenant's turn.
func (s *Server) getRecording(w http.ResponseWriter, r *http.Request) {
	te, err := s.turn(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.opts.Recordings == nil {
		s.writeError(w, r, fault.New(fault.NotFound, "recording", "no recording of turn %q is kept", te.turn.RunID()))
		return
	}
	data, err := s.opts.Recordings.RecordingBytes(te.turn.RunID())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-ndjson")
	h.Set("Content-Disposition", `attachment; filename="`+te.turn.RunID()+`.jsonl"`)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
}

// steerRequest is the body of POST .../steer.
type steerRequest struct {
	Text    string           `json:"text,omitempty"`
	Message *message.Message `json:"message,omitempty"`
}

// steerTurn queues a message for the running turn: 202 with the queue's
// length, or the reason it was not queued (the turn ended or is
// interrupting: 409; too large: 413; the queue is full: 429).
func (s *Server) steerTurn(w http.ResponseWriter, r *http.Request) {
	te, err := s.turn(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var sr steerRequest
	err = decodeJSON(r.Body, &sr, true)
	var m message.Message
	if err == nil {
		m, err = userMessage(sr.Text, sr.Message, "steer")
	}
	if err == nil {
		err = te.turn.Steer(m)
	}
	if err != nil {
		s.writeSteerError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"queued": true, "pending_steer": te.turn.PendingSteer()})
}

func (s *Server) writeSteerError(w http.ResponseWriter, r *http.Request, err error) {
	e := errorOf(err)
	var ie *agent.InterruptedError
	switch {
	case errors.Is(err, session.ErrSteerClosed), errors.As(err, &ie):
		e.status = http.StatusConflict
	case errors.Is(err, session.ErrSteerTooLarge):
		e.status = http.StatusRequestEntityTooLarge
	}
	s.noteError(r, e)
	writeErrorHeaders(w, e)
	writeJSON(w, e.status, nativeError{Error: nativeErrorBody{Kind: e.kind, Message: e.message}})
}

// interruptRequest is the optional body of POST .../interrupt.
type interruptRequest struct {
	Detail string `json:"detail,omitempty"`
}

// interruptTurn asks the turn to stop at its next safe point (cause
// user_cancel); 202, also for a settled turn.
func (s *Server) interruptTurn(w http.ResponseWriter, r *http.Request) {
	te, err := s.turn(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var ir interruptRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(r.Body, &ir, true); err != nil && !errors.Is(err, io.EOF) {
			s.writeError(w, r, err)
			return
		}
	}
	if err := te.turn.Interrupt(agent.Interrupt{Cause: agent.CauseUserCancel, Detail: ir.Detail}); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, te.view())
}

// answerRequest is the body of POST .../prompts/{pid}.
type answerRequest struct {
	Text     string            `json:"text,omitempty"`
	Parts    []message.Part    `json:"parts,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// decodeAnswer reads a prompt's answer: text or parts (an empty text is
// an empty answer).
func decodeAnswer(r io.Reader) (agent.UserReply, error) {
	var ar answerRequest
	if err := decodeJSON(r, &ar, true); err != nil {
		return agent.UserReply{}, err
	}
	if ar.Text != "" && ar.Parts != nil {
		return agent.UserReply{}, fault.New(fault.Validation, "answer", "give text or parts, not both")
	}
	parts := ar.Parts
	if parts == nil {
		parts = []message.Part{message.TextPart(ar.Text)}
	}
	if err := (message.Message{Role: message.RoleUser, Parts: parts}).Validate(); err != nil {
		return agent.UserReply{}, fault.Wrap(fault.Validation, err, "answer", "parts")
	}
	return agent.UserReply{Parts: parts, Metadata: ar.Metadata}, nil
}

func (s *Server) answerPrompt(w http.ResponseWriter, r *http.Request) {
	te, err := s.turn(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply, err := decodeAnswer(r.Body)
	if err == nil {
		err = te.turn.Reply(r.Context(), r.PathValue("pid"), reply)
	}
	if err != nil {
		if errors.Is(err, session.ErrPromptClosed) {
			e := errorOf(err)
			e.status = http.StatusConflict
			s.noteError(r, e)
			writeJSON(w, e.status, nativeError{Error: nativeErrorBody{Kind: e.kind, Message: e.message}})
			return
		}
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"answered": r.PathValue("pid")})
}
