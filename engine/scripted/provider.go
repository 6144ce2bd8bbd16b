package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/agent"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
)

// Impl is the factory's impl name.
const Impl = "scripted"

const (
	opBuild    = "build scripted provider"
	opGenerate = "scripted generate"
	inputVar   = "{{input}}"
)

// Factory returns the factory of kind model.Provider, impl "scripted". It
// has no deps; its settings are Settings. The value is a *Provider.
func Factory() resource.Factory {
	return resource.FactoryFunc(resource.Spec{Kind: model.Kind, Impl: Impl}, func(_ context.Context, in resource.Input) (any, error) {
		s, err := Parse(in.Settings)
		if err != nil {
			return nil, fault.Wrap(fault.Validation, err, fmt.Sprintf("build provider %q", in.Name), "")
		}
		return New(s)
	})
}

// Provider answers from canned replies. It keeps no state between calls:
// which reply answers depends only on the request, so concurrent
// conversations, retries and replays get the same answers. It is safe
// for concurrent use.
//
// A call is answered by the first reply with a condition that holds
// (every one of match, regex and on that is set), else by the ordered
// reply at the conversation's turn — the number of assistant messages
// already in the request, counting from 0 — (modulo their count when loop
// is set), else by the fallback; with none of them the call fails with
// NotAvailable.
type Provider struct {
	replies  []*reply // conditional and ordered, in document order
	ordered  []*reply
	fallback *reply
	loop     bool
}

var (
	_ model.Provider       = (*Provider)(nil)
	_ model.ProfileChecker = (*Provider)(nil)
	_ model.IntentChecker  = (*Provider)(nil)
)

// CheckIntent refuses every modality but text: the replies are text.
func (p *Provider) CheckIntent(i model.Intent) error { return model.CheckTextOnly(opGenerate, i) }

// CheckProfile refuses every profile but the empty one: the provider has
// no profiles.
func (p *Provider) CheckProfile(profile string) error {
	if profile == "" {
		return nil
	}
	return fault.New(fault.Validation, opGenerate, "profile %q: the scripted provider has no profiles", profile)
}

// New returns a provider for s.
func New(s Settings) (*Provider, error) {
	rs, err := s.compile()
	if err != nil {
		return nil, err
	}
	p := &Provider{loop: s.Loop}
	if s.Fallback != nil {
		p.fallback, rs = rs[len(rs)-1], rs[:len(rs)-1]
	}
	p.replies = rs
	for _, r := range rs {
		if !r.condition {
			p.ordered = append(p.ordered, r)
		}
	}
	return p, nil
}

// Generate answers req with its reply: the text streamed in the reply's
// chunks, then each tool call, when onDelta is set. A reply with an error
// fails after its text. ctx is checked before every delta.
func (p *Provider) Generate(ctx context.Context, req model.Request, onDelta func(model.Delta) error) (model.Response, error) {
	if ctx == nil {
		return model.Response{}, fault.New(fault.Validation, opGenerate, "ctx must not be nil")
	}
	if len(req.Messages) == 0 {
		return model.Response{}, fault.New(fault.Validation, opGenerate, "the request has no messages")
	}
	if err := p.CheckProfile(req.Profile); err != nil {
		return model.Response{}, err
	}
	if err := p.CheckIntent(req.Intent); err != nil {
		return model.Response{}, err
	}
	turn := assistantTurns(req.Messages)
	input := lastText(req.Messages[len(req.Messages)-1])
	r, err := p.pick(req.Messages[len(req.Messages)-1], input, turn)
	if err != nil {
		return model.Response{}, err
	}
	text := strings.ReplaceAll(r.Text, inputVar, input)
	calls := r.calls(turn, input)
	resp := model.Response{FinishReason: r.Finish, Usage: r.usage(req, text, calls)}
	streamed, err := stream(ctx, text, r.Chunks, calls, onDelta)
	if err == nil && r.kind != nil {
		msg := r.Error.Message
		if msg == "" {
			msg = "the scripted reply fails"
		}
		err = fault.New(r.kind, opGenerate, "turn %d: %s", turn, msg)
	}
	if err != nil {
		resp.Message, resp.FinishReason = assistantMessage(streamed, nil), ""
		return resp, err
	}
	resp.Message = assistantMessage(text, calls)
	return resp, nil
}

// pick finds the reply of a call.
func (p *Provider) pick(last message.Message, input string, turn int) (*reply, error) {
	for _, r := range p.replies {
		if r.condition && r.holds(last, input) {
			return r, nil
		}
	}
	if n := len(p.ordered); n > 0 && (turn < n || p.loop) {
		return p.ordered[turn%n], nil
	}
	if p.fallback != nil {
		return p.fallback, nil
	}
	return nil, fault.New(fault.NotAvailable, opGenerate, "no reply for turn %d (%d ordered replies, no condition held, no fallback)",
		turn, len(p.ordered))
}

func (r *reply) holds(last message.Message, input string) bool {
	switch {
	case r.On != "" && string(last.Role) != r.On:
		return false
	case r.Match != "" && !strings.Contains(strings.ToLower(input), strings.ToLower(r.Match)):
		return false
	case r.regex != nil && !r.regex.MatchString(input):
		return false
	}
	return true
}

// calls returns the reply's tool calls with their ids and arguments.
func (r *reply) calls(turn int, input string) []message.ToolCall {
	out := make([]message.ToolCall, 0, len(r.ToolCalls))
	escaped := jsonInner(input)
	for i, tc := range r.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", turn, i)
		}
		out = append(out, message.ToolCall{ID: id, Name: tc.Name, Arguments: strings.ReplaceAll(r.args[i], inputVar, escaped)})
	}
	return out
}

// usage is the reply's usage, or words in and words out.
func (r *reply) usage(req model.Request, text string, calls []message.ToolCall) agent.Usage {
	if u := r.Usage; u != nil {
		total := u.Total
		if total == 0 {
			total = u.Input + u.Output
		}
		return agent.Usage{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: total}
	}
	in := words(req.System)
	for _, m := range req.Messages {
		in += words(lastText(m))
	}
	out := words(text)
	for _, c := range calls {
		out += 1 + words(c.Arguments)
	}
	return agent.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

// stream passes text (in chunks) and calls to onDelta and returns the
// text passed on.
func stream(ctx context.Context, text string, chunks int, calls []message.ToolCall, onDelta func(model.Delta) error) (string, error) {
	if onDelta == nil {
		return text, ctx.Err()
	}
	var sent strings.Builder
	for _, piece := range split(text, chunks) {
		if err := ctx.Err(); err != nil {
			return sent.String(), fault.FromContext(err, opGenerate)
		}
		if err := onDelta(model.Delta{Text: piece}); err != nil {
			return sent.String(), err
		}
		sent.WriteString(piece)
	}
	for i := range calls {
		if err := ctx.Err(); err != nil {
			return sent.String(), fault.FromContext(err, opGenerate)
		}
		c := calls[i]
		if err := onDelta(model.Delta{ToolCall: &c}); err != nil {
			return sent.String(), err
		}
	}
	return sent.String(), nil
}

// split cuts text into n pieces of about the same number of runes, or,
// for n = 0, into words, each with the spaces after it.
func split(text string, n int) []string {
	if text == "" {
		return nil
	}
	var out []string
	if n == 0 {
		start, inSpace := 0, false
		for i, r := range text {
			sp := unicode.IsSpace(r)
			if inSpace && !sp {
				out = append(out, text[start:i])
				start = i
			}
			inSpace = sp
		}
		return append(out, text[start:])
	}
	runes := utf8.RuneCountInString(text)
	n = min(n, runes)
	size, count, start := (runes+n-1)/n, 0, 0
	for j := range text {
		if count == size {
			out = append(out, text[start:j])
			start, count = j, 0
		}
		count++
	}
	return append(out, text[start:])
}

// assistantTurns counts the assistant messages of a conversation.
func assistantTurns(msgs []message.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == message.RoleAssistant {
			n++
		}
	}
	return n
}

// lastText is what {{input}} and the conditions see of a message: its
// text, or for a tool message its results' contents, one per line.
func lastText(m message.Message) string {
	if m.Role != message.RoleTool {
		return m.Text()
	}
	var parts []string
	for _, p := range m.Parts {
		if p.ToolResult != nil {
			parts = append(parts, p.ToolResult.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// assistantMessage is the reply as a message (a text part, possibly
// empty, when there are no calls).
func assistantMessage(text string, calls []message.ToolCall) message.Message {
	m := message.Message{Role: message.RoleAssistant}
	if text != "" || len(calls) == 0 {
		m.Parts = append(m.Parts, message.TextPart(text))
	}
	for _, c := range calls {
		m.Parts = append(m.Parts, message.ToolCallPart(c.ID, c.Name, c.Arguments))
	}
	return m
}

// jsonInner returns s escaped for the inside of a JSON string.
func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func words(s string) int64 { return int64(len(strings.Fields(s))) }
