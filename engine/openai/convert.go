package openai

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/corral-rt/corral/fault"
	"github.com/corral-rt/corral/runtime/message"
	"github.com/corral-rt/corral/runtime/model"
	"github.com/corral-rt/corral/runtime/tool"
	goopenai "github.com/sashabaranov/go-openai"
)

// emptySchema is the parameters of a tool that declares none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// chatRequest turns req into a Chat Completions request. Errors are
// Validation errors naming the message or tool.
func (p *Provider) chatRequest(req model.Request, stream bool) (goopenai.ChatCompletionRequest, error) {
	out := goopenai.ChatCompletionRequest{Model: req.Model, Stream: stream}
	if out.Model == "" {
		out.Model = p.cfg.model
	}
	if out.Model == "" {
		return out, fault.New(fault.Validation, opGenerate, "no model: the request names none and settings.model is empty")
	}
	if req.System != "" {
		out.Messages = append(out.Messages, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: req.System})
	}
	for i, m := range req.Messages {
		msgs, err := chatMessages(m)
		if err != nil {
			return out, fault.Wrap(fault.Validation, err, opGenerate, "messages[%d]", i)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	if len(out.Messages) == 0 {
		return out, fault.New(fault.Validation, opGenerate, "the request has no messages")
	}
	tools, err := chatTools(req.Tools)
	if err != nil {
		return out, err
	}
	out.Tools = tools
	if out.ToolChoice, err = chatToolChoice(req.ToolChoice, req.Tools); err != nil {
		return out, err
	}
	if stream && p.cfg.includeUsage {
		out.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	}
	return out, nil
}

// chatMessages turns one message into wire messages: one per tool result
// for a tool message, exactly one otherwise.
func chatMessages(m message.Message) ([]goopenai.ChatCompletionMessage, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	switch m.Role {
	case message.RoleTool:
		var out []goopenai.ChatCompletionMessage
		for _, p := range m.Parts {
			if r := p.ToolResult; r != nil {
				content := r.Content
				if r.IsError {
					content = "error: " + content
				}
				out = append(out, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleTool, ToolCallID: r.ToolCallID, Content: content})
			}
		}
		if len(out) == 0 {
			return nil, fault.New(fault.Validation, "", "a tool message needs a tool_result part")
		}
		return out, nil
	case message.RoleAssistant:
		w := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleAssistant, Content: contentOf(m), Name: m.Name}
		for _, c := range m.ToolCalls() {
			args := c.Arguments
			if args == "" {
				args = "{}"
			}
			w.ToolCalls = append(w.ToolCalls, goopenai.ToolCall{ID: c.ID, Type: goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: c.Name, Arguments: args}})
		}
		return []goopenai.ChatCompletionMessage{w}, nil
	}
	return []goopenai.ChatCompletionMessage{{Role: string(m.Role), Content: contentOf(m), Name: m.Name}}, nil
}

// contentOf joins the text parts of m and the JSON of its data parts.
func contentOf(m message.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p.Type {
		case message.PartText:
			b.WriteString(p.Text)
		case message.PartData:
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.Write(p.Data)
		}
	}
	return b.String()
}

// chatTools turns tool definitions into function tools. A tool needs a
// name; its parameters, when given, must be a JSON object.
func chatTools(defs []tool.Definition) ([]goopenai.Tool, error) {
	var out []goopenai.Tool
	seen := map[string]bool{}
	for i, d := range defs {
		switch {
		case d.Name == "":
			return nil, fault.New(fault.Validation, opGenerate, "tools[%d]: name is required", i)
		case seen[d.Name]:
			return nil, fault.New(fault.Validation, opGenerate, "tools[%d]: tool %q is listed twice", i, d.Name)
		}
		seen[d.Name] = true
		params := d.Parameters
		if len(bytes.TrimSpace(params)) == 0 {
			params = emptySchema
		} else if !json.Valid(params) || bytes.TrimSpace(params)[0] != '{' {
			return nil, fault.New(fault.Validation, opGenerate, "tools[%d] (%s): parameters must be a JSON object schema", i, d.Name)
		}
		out = append(out, goopenai.Tool{Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{Name: d.Name, Description: d.Description, Parameters: params}})
	}
	return out, nil
}

// chatToolChoice turns a tool choice into its wire form: nil, a keyword,
// or the function of that name, which must be among the tools.
func chatToolChoice(choice string, defs []tool.Definition) (any, error) {
	switch choice {
	case "":
		return nil, nil
	case model.ToolChoiceAuto, model.ToolChoiceNone, model.ToolChoiceRequired:
		return choice, nil
	}
	for _, d := range defs {
		if d.Name == choice {
			return goopenai.ToolChoice{Type: goopenai.ToolTypeFunction, Function: goopenai.ToolFunction{Name: choice}}, nil
		}
	}
	return nil, fault.New(fault.Validation, opGenerate, "tool_choice %q is not auto, none, required or one of the request's tools", choice)
}

// unaryResponse turns a Chat Completions response into a Response.
func unaryResponse(r goopenai.ChatCompletionResponse) (model.Response, error) {
	if len(r.Choices) == 0 {
		return model.Response{}, fault.New(fault.Internal, opGenerate, "the response has no choices")
	}
	ch := r.Choices[0]
	var calls []message.ToolCall
	for i, tc := range ch.Message.ToolCalls {
		pc := &partialCall{index: i, id: tc.ID, name: tc.Function.Name}
		pc.args.WriteString(tc.Function.Arguments)
		call, err := pc.finished()
		if err != nil {
			return model.Response{}, err
		}
		calls = append(calls, call)
	}
	return model.Response{
		Message:      assistantMessage(ch.Message.Content, calls),
		FinishReason: finishOf(string(ch.FinishReason), len(calls) > 0),
		Usage:        usageOf(r.Usage),
	}, nil
}
