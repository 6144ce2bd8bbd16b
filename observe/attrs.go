package observe

import (
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"

	"github.com/corral-rt/corral/runtime/event"
)

// The attribute keys of the spans: the GenAI semantic conventions
// (v1.41.0, in development) and Corral's own (docs/observability.md).
const (
	KeyOperationName  = attribute.Key("gen_ai.operation.name")
	KeyAgentName      = attribute.Key("gen_ai.agent.name")
	KeyAgentID        = attribute.Key("gen_ai.agent.id")
	KeyConversationID = attribute.Key("gen_ai.conversation.id")
	KeyProviderName   = attribute.Key("gen_ai.provider.name")
	KeyRequestModel   = attribute.Key("gen_ai.request.model")
	KeyInputTokens    = attribute.Key("gen_ai.usage.input_tokens")
	KeyOutputTokens   = attribute.Key("gen_ai.usage.output_tokens")
	KeyFinishReasons  = attribute.Key("gen_ai.response.finish_reasons")
	KeyToolName       = attribute.Key("gen_ai.tool.name")
	KeyToolCallID     = attribute.Key("gen_ai.tool.call.id")
	KeyToolType       = attribute.Key("gen_ai.tool.type")
	KeyErrorType      = attribute.Key("error.type")
	KeyTenant         = attribute.Key("corral.tenant")
	KeyRunID          = attribute.Key("corral.run.id")
	KeyEngine         = attribute.Key("corral.engine")
	KeyGraph          = attribute.Key("corral.graph")
	KeyNodeID         = attribute.Key("corral.node.id")
	KeyStatus         = attribute.Key("corral.status")
	KeyQuota          = attribute.Key("corral.quota")
	KeyCPUMs          = attribute.Key("corral.cpu_ms")
	KeyParentRunID    = attribute.Key("corral.parent_run.id")
	KeyObserverClosed = attribute.Key("corral.observer.ended_early")
	operationInvoke   = "invoke_agent"
	operationChat     = "chat"
	operationExecTool = "execute_tool"
	toolTypeFunction  = "function"
)

func runAttrs(env event.Envelope, name, engine string) []attribute.KeyValue {
	a := []attribute.KeyValue{
		KeyOperationName.String(operationInvoke),
		KeyAgentName.String(clip(name)),
		KeyAgentID.String(clip(env.Header(event.HeaderAgentID))),
		KeyRunID.String(clip(env.Header(event.HeaderRunID))),
	}
	for _, kv := range []struct {
		key attribute.Key
		v   string
	}{
		{KeyConversationID, env.Header(event.HeaderContextID)},
		{KeyTenant, env.Header(event.HeaderTenant)},
		{KeyEngine, engine},
		{KeyGraph, env.Header(event.HeaderGraphID)},
		{KeyParentRunID, env.Header(event.HeaderParentRunID)},
	} {
		if kv.v != "" {
			a = append(a, kv.key.String(clip(kv.v)))
		}
	}
	return a
}

func endAttrs(r *runTrack, status, quota string) []attribute.KeyValue {
	a := []attribute.KeyValue{KeyStatus.String(status), KeyInputTokens.Int64(r.input), KeyOutputTokens.Int64(r.output)}
	if quota != "" {
		a = append(a, KeyQuota.String(quota))
	}
	return a
}

func modelAttrs(p event.CallPayload) []attribute.KeyValue {
	a := []attribute.KeyValue{
		KeyOperationName.String(operationChat),
		KeyRequestModel.String(clip(p.Name)),
		KeyProviderName.String(clip(p.Provider)),
		KeyInputTokens.Int64(p.InputTokens),
		KeyOutputTokens.Int64(p.OutputTokens),
		KeyNodeID.String(clip(p.NodeID)),
	}
	if p.FinishReason != "" {
		a = append(a, KeyFinishReasons.StringSlice([]string{clip(p.FinishReason)}))
	}
	return a
}

func toolAttrs(p event.CallPayload) []attribute.KeyValue {
	return []attribute.KeyValue{
		KeyOperationName.String(operationExecTool),
		KeyToolName.String(clip(p.Name)),
		KeyToolCallID.String(clip(p.ToolCallID)),
		KeyToolType.String(toolTypeFunction),
		KeyNodeID.String(clip(p.NodeID)),
	}
}

func attrErrorType(t string) attribute.KeyValue { return KeyErrorType.String(t) }

func attrObserverClosed(why string) attribute.KeyValue { return KeyObserverClosed.String(why) }

// maxAttrLen bounds, in bytes, every string the observer puts on a span
// (its name, an attribute, its status): they come from requests, models,
// tools and scripts, none of which the observer trusts to be short.
const maxAttrLen = 512

// clip cuts s to at most maxAttrLen bytes, at a rune's start, and makes
// it valid UTF-8.
func clip(s string) string {
	if len(s) > maxAttrLen {
		n := maxAttrLen
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// httpMethods are the methods http.request.method takes as they are
// (RFC 9110 and PATCH); any other is "_OTHER", as the HTTP semantic
// conventions ask, so that a client cannot choose the attribute's value.
var httpMethods = map[string]bool{
	"CONNECT": true, "DELETE": true, "GET": true, "HEAD": true, "OPTIONS": true,
	"PATCH": true, "POST": true, "PUT": true, "TRACE": true,
}

func httpMethod(m string) string {
	if httpMethods[m] {
		return m
	}
	return "_OTHER"
}
