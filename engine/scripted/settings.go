package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/resource"
)

// Limits of the settings, so that a document cannot make the provider
// build huge replies.
const (
	MaxReplies = 1024
	MaxChunks  = 4096
)

// Settings are the settings of a model.Provider/scripted.
type Settings struct {
	// Replies are the canned replies. A reply with a condition (match,
	// regex, on) answers any call whose conversation meets it, the first
	// such reply winning; the others are answered in order (see Provider).
	Replies []Reply `json:"replies,omitempty"`
	// Loop starts the ordered replies over when they run out.
	Loop bool `json:"loop,omitempty"`
	// Fallback answers a call no other reply answers.
	Fallback *Reply `json:"fallback,omitempty"`
}

// Reply is one canned reply.
type Reply struct {
	// Match is a substring of the last message's text, compared without
	// regard to case.
	Match string `json:"match,omitempty"`
	// Regex is a regular expression (RE2 syntax) the last message's text
	// must match.
	Regex string `json:"regex,omitempty"`
	// On is the role the last message must have: user or tool.
	On string `json:"on,omitempty"`
	// Text is the reply's text. {{input}} stands for the last message's
	// text (a user message's text, or a tool message's results, one per
	// line).
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls the reply asks for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Chunks is how many deltas the text streams in; 0 means one per word.
	Chunks int `json:"chunks,omitempty"`
	// Finish is the finish reason; default tool_calls when the reply has
	// calls, stop otherwise.
	Finish string `json:"finish,omitempty"`
	// Usage is the reported usage; default: words in, words out.
	Usage *Usage `json:"usage,omitempty"`
	// Error fails the call after the text was streamed.
	Error *Error `json:"error,omitempty"`
}

// ToolCall is a canned tool call. Arguments is a JSON object, or a string
// holding a JSON text; {{input}} inside it stands for the last message's
// text, escaped for a JSON string.
type ToolCall struct {
	ID        string          `json:"id,omitempty"` // default call_<turn>_<index>
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Usage is a reply's usage.
type Usage struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Total  int64 `json:"total,omitempty"` // default input + output
}

// Error is the failure of a reply.
type Error struct {
	Kind    string `json:"kind"` // a fault kind name: rate_limit, not_available, timeout, ...
	Message string `json:"message,omitempty"`
}

// reply is a Reply checked and compiled.
type reply struct {
	Reply
	regex     *regexp.Regexp
	args      []string // the calls' arguments as JSON texts
	kind      *fault.Kind
	condition bool
}

// Parse decodes settings strictly and checks them. Errors are Validation
// errors naming the key (settings.replies[2].regex).
func Parse(raw json.RawMessage) (Settings, error) {
	s, err := resource.DecodeTyped[Settings](raw)
	if err != nil {
		return s, fault.Wrap(fault.Validation, err, opBuild, "settings")
	}
	_, err = s.compile()
	return s, err
}

// compile checks s and compiles its replies: the replies, then the
// fallback (nil when absent).
func (s Settings) compile() ([]*reply, error) {
	if len(s.Replies) == 0 && s.Fallback == nil {
		return nil, invalid("settings.replies", "at least one reply or a fallback is required")
	}
	if len(s.Replies) > MaxReplies {
		return nil, invalid("settings.replies", "%d replies, at most %d", len(s.Replies), MaxReplies)
	}
	out := make([]*reply, 0, len(s.Replies)+1)
	for i, r := range s.Replies {
		c, err := r.compile(fmt.Sprintf("settings.replies[%d]", i))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if s.Fallback != nil {
		c, err := s.Fallback.compile("settings.fallback")
		if err != nil {
			return nil, err
		}
		if c.condition {
			return nil, invalid("settings.fallback", "a fallback takes no match, regex or on")
		}
		out = append(out, c)
	}
	return out, nil
}

func (r Reply) compile(path string) (*reply, error) {
	c := &reply{Reply: r, condition: r.Match != "" || r.Regex != "" || r.On != ""}
	if r.Text == "" && len(r.ToolCalls) == 0 && r.Error == nil {
		return nil, invalid(path, "a reply needs text, tool_calls or error")
	}
	if r.Regex != "" {
		re, err := regexp.Compile(r.Regex)
		if err != nil {
			return nil, fault.Wrap(fault.Validation, err, opBuild, "%s.regex", path)
		}
		c.regex = re
	}
	switch r.On {
	case "", "user", "tool":
	default:
		return nil, invalid(path+".on", "%q is not user or tool", r.On)
	}
	if r.Chunks < 0 || r.Chunks > MaxChunks {
		return nil, invalid(path+".chunks", "must be between 0 and %d, got %d", MaxChunks, r.Chunks)
	}
	if err := c.compileCalls(path); err != nil {
		return nil, err
	}
	if err := c.checkFinish(path); err != nil {
		return nil, err
	}
	if u := r.Usage; u != nil && (u.Input < 0 || u.Output < 0 || u.Total < 0) {
		return nil, invalid(path+".usage", "counts must be >= 0")
	}
	if e := r.Error; e != nil {
		k, ok := fault.ParseKind(e.Kind)
		if !ok {
			return nil, invalid(path+".error.kind", "%q is not an error kind (rate_limit, not_available, timeout, ...)", e.Kind)
		}
		c.kind = k
	}
	return c, nil
}

func (c *reply) compileCalls(path string) error {
	seen := map[string]bool{}
	for i, tc := range c.ToolCalls {
		at := fmt.Sprintf("%s.tool_calls[%d]", path, i)
		if strings.TrimSpace(tc.Name) == "" {
			return invalid(at+".name", "required")
		}
		if tc.ID != "" {
			if seen[tc.ID] {
				return invalid(at+".id", "%q is used twice", tc.ID)
			}
			seen[tc.ID] = true
		}
		args, err := argumentsText(tc.Arguments)
		if err != nil {
			return invalid(at+".arguments", "%v", err)
		}
		c.args = append(c.args, args)
	}
	return nil
}

// argumentsText returns a call's arguments as a compact JSON text: an
// object as it is, a string as the JSON text it holds, nothing as {}.
func argumentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("not a JSON string")
		}
		raw = []byte(strings.TrimSpace(s))
	}
	var b bytes.Buffer
	if len(raw) == 0 || raw[0] != '{' || json.Compact(&b, raw) != nil {
		return "", fmt.Errorf("want a JSON object or a string holding one")
	}
	return b.String(), nil
}

func (c *reply) checkFinish(path string) error {
	switch c.Finish {
	case "":
		c.Finish = model.FinishStop
		if len(c.ToolCalls) > 0 {
			c.Finish = model.FinishToolCalls
		}
	case model.FinishStop, model.FinishLength, model.FinishContentFilter:
		if len(c.ToolCalls) > 0 {
			return invalid(path+".finish", "a reply with tool calls finishes with tool_calls")
		}
	case model.FinishToolCalls:
		if len(c.ToolCalls) == 0 {
			return invalid(path+".finish", "tool_calls needs tool calls")
		}
	default:
		return invalid(path+".finish", "%q is not stop, length, content_filter or tool_calls", c.Finish)
	}
	return nil
}

func invalid(path, format string, args ...any) error {
	return fault.New(fault.Validation, opBuild, path+": "+format, args...)
}
