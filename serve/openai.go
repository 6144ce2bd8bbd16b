package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/session"
)

// HeaderContextID names the session context of a chat completion: with
// it, the turn runs in the durable session of the model (the agent) and
// that context id, and only the request's last message is sent; without
// it, the turn runs in a fresh ephemeral session whose history is the
// request's messages before the last.
const HeaderContextID = "X-Corral-Context-Id"

// chatRequest is the part of OpenAI's chat completion request that a turn
// uses; other fields (temperature, max_tokens, ...) are accepted and
// ignored, since the agent's document decides them.
type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream,omitempty"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	User string `json:"user,omitempty"`
	// N is how many choices to generate: a turn has one answer, so only
	// 1 (or none) is accepted (REF 11.2.7).
	N *int `json:"n,omitempty"`
}

// chatMessage is one message of OpenAI's wire.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    chatContent    `json:"content,omitempty"` // a string, an array of parts, or null
	Name       string         `json:"name,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// decodeChatRequest reads and checks a chat completion request and
// converts its messages: the last one is the turn's message, the others
// its history.
func decodeChatRequest(r io.Reader) (chatRequest, []message.Message, error) {
	var req chatRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return req, nil, err
	}
	if req.Model == "" {
		return req, nil, withParam("model", fault.New(fault.Validation, "chat", "model is required"))
	}
	if len(req.Messages) == 0 {
		return req, nil, withParam("messages", fault.New(fault.Validation, "chat", "messages must hold at least one message"))
	}
	if req.N != nil && *req.N != 1 {
		return req, nil, withParam("n", fault.New(fault.Validation, "chat", "n is %d; a turn has one answer, so n must be 1", *req.N))
	}
	msgs := make([]message.Message, 0, len(req.Messages))
	for i, cm := range req.Messages {
		m, err := cm.toMessage()
		if err != nil {
			return req, nil, withParam(fmt.Sprintf("messages[%d]", i), fault.Wrap(fault.Validation, err, "chat", "messages[%d]", i))
		}
		msgs = append(msgs, m)
	}
	return req, msgs, nil
}

// toMessage converts one wire message.
func (cm chatMessage) toMessage() (message.Message, error) {
	role := message.Role(cm.Role)
	switch cm.Role {
	case "system", "developer":
		role = message.RoleSystem
	case "user", "assistant", "tool":
	default:
		return message.Message{}, fault.New(fault.Validation, "", "role %q is not one of system, developer, user, assistant, tool", cm.Role)
	}
	text, err := contentText(cm.Content)
	if err != nil {
		return message.Message{}, err
	}
	m := message.Message{Role: role, Name: cm.Name}
	switch {
	case role == message.RoleTool:
		if cm.ToolCallID == "" {
			return message.Message{}, fault.New(fault.Validation, "", "tool_call_id is required in a tool message")
		}
		m.Parts = []message.Part{message.ToolResultPart(cm.ToolCallID, text, false)}
	default:
		if text != "" || len(cm.ToolCalls) == 0 {
			m.Parts = append(m.Parts, message.TextPart(text))
		}
		for j, tc := range cm.ToolCalls {
			if role != message.RoleAssistant {
				return message.Message{}, fault.New(fault.Validation, "", "tool_calls[%d]: only an assistant message calls tools", j)
			}
			m.Parts = append(m.Parts, message.ToolCallPart(tc.ID, tc.Function.Name, tc.Function.Arguments))
		}
	}
	if err := m.Validate(); err != nil {
		return message.Message{}, err
	}
	return m, nil
}

// chatContent is a message's content as the request holds it: a plain
// string is decoded as it is read (the common case, without a second
// decoding); anything else is kept raw for contentText.
type chatContent struct {
	text string
	raw  json.RawMessage // not a plain string: decoded by contentText
}

// UnmarshalJSON keeps data: a string without escapes in valid UTF-8 as
// its text, any other value raw (null is no content).
func (c *chatContent) UnmarshalJSON(data []byte) error {
	c.text, c.raw = "", nil
	if n := len(data); n >= 2 && data[0] == '"' && data[n-1] == '"' {
		if in := data[1 : n-1]; bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
			c.text = string(in)
			return nil
		}
	}
	if string(data) != "null" {
		c.raw = append(json.RawMessage(nil), data...)
	}
	return nil
}

// contentText reads a message's content: a string, null, or an array of
// text parts (other part types are refused).
func contentText(c chatContent) (string, error) {
	raw := c.raw
	if len(raw) == 0 {
		return c.text, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []chatContentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fault.New(fault.Validation, "", "content is neither a string nor an array of parts")
	}
	var b strings.Builder
	for i, p := range parts {
		if p.Type != "text" {
			return "", fault.New(fault.Validation, "", "content[%d]: part type %q is not supported (only text)", i, p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// openAIError is OpenAI's error body.
type openAIError struct {
	Error openAIErrorBody `json:"error"`
}

type openAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// openAIErrorOf builds OpenAI's error body of e: its type from the
// status, its code the quota's key or the fault kind.
func openAIErrorOf(e apiError) openAIError {
	typ := "api_error"
	switch e.status {
	case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusMethodNotAllowed:
		typ = "invalid_request_error"
	case http.StatusUnauthorized:
		typ = "authentication_error"
	case http.StatusForbidden:
		typ = "permission_error"
	case http.StatusNotFound:
		typ = "not_found_error"
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case http.StatusServiceUnavailable:
		typ = "overloaded_error"
	}
	code := e.kind
	if e.quota != "" {
		code = e.quota
	}
	var param *string
	if e.param != "" {
		param = &e.param
	}
	return openAIError{Error: openAIErrorBody{Message: e.message, Type: typ, Param: param, Code: code}}
}

// paramError is an error of one field of the request, which OpenAI's
// error shape names as its param (REF 11.2.7).
type paramError struct {
	param string
	err   error
}

func (e *paramError) Error() string { return e.err.Error() }
func (e *paramError) Unwrap() error { return e.err }

// withParam marks err as the fault of the request's field param; nil
// stays nil.
func withParam(param string, err error) error {
	if err == nil {
		return nil
	}
	return &paramError{param: param, err: err}
}

// checkChatContextID checks the context id a chat completion names in
// its header as the native API checks a context_id (REF 11.2.8).
func checkChatContextID(key session.Key) error {
	if err := checkContextID(key.ContextID); err != nil {
		return fault.Wrap(fault.Validation, err, "chat", "header %s", HeaderContextID)
	}
	if err := key.Validate(); err != nil {
		return fault.Wrap(fault.Validation, err, "chat", "header %s", HeaderContextID)
	}
	return nil
}

// errStreamOverflow ends a streamed completion that lost some of its
// deltas (REF 11.2.9): its turn may have completed, but the client did
// not get all of its text, so the stream does not finish "stop".
type errStreamOverflow struct{ reason string }

func (e *errStreamOverflow) Error() string {
	return "the stream lost part of the answer and is incomplete: " + e.reason
}

// overflowOf is the error of an overflow event of a turn's log.
func overflowOf(ev streamEvent) error {
	var v struct {
		Reason string `json:"reason"`
	}
	_ = json.Unmarshal(ev.data, &v)
	if v.Reason == "" {
		v.Reason = "the turn's events came faster than the stream took them"
	}
	return &errStreamOverflow{reason: v.Reason}
}

// streamOutcome is the error a streamed completion ends with: the turn's
// own, else lost when the stream lost deltas, else nil.
func streamOutcome(te *turnEntry, lost error) error {
	if err := turnError(te); err != nil {
		return err
	}
	return lost
}

// writeOpenAIError answers an OpenAI-compatible request with err.
func (s *Server) writeOpenAIError(w http.ResponseWriter, r *http.Request, err error) {
	e := errorOf(err)
	s.noteError(r, e)
	writeErrorHeaders(w, e)
	writeJSON(w, e.status, openAIErrorOf(e))
}

// modelView is an agent as an OpenAI model.
type modelView struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r.Context())
	data := []modelView{}
	for _, a := range s.agentsOf(tenant) {
		data = append(data, modelView{ID: a.ID, Object: "model", OwnedBy: tenant})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	tenant := tenantOf(r.Context())
	a, err := s.agentOf(tenant, r.PathValue("model"))
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, modelView{ID: a.ID, Object: "model", OwnedBy: tenant})
}

var errNoUserMessage = errors.New("the last message must be a user or tool message: it is what the turn answers")
