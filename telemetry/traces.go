package telemetry

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/session"
)

// Span attributes of agentrt's own, beside the GenAI semantic conventions'
// (semconv v1.41.0, the last to define the gen_ai keys).
const (
	attrTenant       = attribute.Key("agentrt.tenant")
	attrRunID        = attribute.Key("agentrt.run.id")
	attrTurn         = attribute.Key("agentrt.turn")
	attrRunReason    = attribute.Key("agentrt.run.reason")
	attrRunStatus    = attribute.Key("agentrt.run.status")
	attrAttempt      = attribute.Key("agentrt.attempt")
	attrPurpose      = attribute.Key("agentrt.model.purpose")
	attrMode         = attribute.Key("agentrt.model.mode")
	attrBlocked      = attribute.Key("agentrt.tool.blocked")
	attrToolRule     = attribute.Key("agentrt.tool.rule")
	maxStatusMessage = 512
)

// runAttrs are the attributes of a run's invoke_agent span, begun by e
// for reason ("new", or why it was resumed).
func runAttrs(info agentrt.HookInfo, e *session.Event, reason string) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(info.Agent),
		semconv.GenAIConversationID(info.SessionID),
		attrTenant.String(info.Tenant),
		attrRunID.String(e.RunID),
		attrTurn.Int(e.Turn),
		attrRunReason.String(reason),
	}
}

// runEndAttrs are set when the run ends: its status and the tokens of
// its model calls.
func runEndAttrs(status string, in, out int64) []attribute.KeyValue {
	a := []attribute.KeyValue{attrRunStatus.String(status)}
	if in > 0 || out > 0 {
		a = append(a, semconv.GenAIUsageInputTokens(int(in)), semconv.GenAIUsageOutputTokens(int(out)))
	}
	return a
}

// modelAttrs are the attributes of a chat span, from its model_started.
func (t *Telemetry) modelAttrs(d *session.ModelStarted) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIRequestModel(d.Model),
		attrAttempt.Int(d.Attempt),
	}
	if t.provider != nil {
		if p := t.provider(d.Model); p != "" {
			a = append(a, semconv.GenAIProviderNameKey.String(p))
		}
	}
	if d.Purpose != "" {
		a = append(a, attrPurpose.String(d.Purpose))
	}
	if d.Mode != "" {
		a = append(a, attrMode.String(d.Mode))
	}
	return a
}

// modelEndAttrs are set from the reply's model_finished.
func modelEndAttrs(d *session.ModelFinished) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.GenAIUsageInputTokens(int(d.Usage.InputTokens)),
		semconv.GenAIUsageOutputTokens(int(d.Usage.OutputTokens)),
	}
	if d.Model != "" {
		a = append(a, semconv.GenAIResponseModel(d.Model))
	}
	if d.FinishReason != "" {
		a = append(a, semconv.GenAIResponseFinishReasons(string(d.FinishReason)))
	}
	return a
}

// toolAttrs are the attributes of an execute_tool span, from its
// tool_call.
func toolAttrs(d *session.ToolCall) []attribute.KeyValue {
	a := []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool,
		semconv.GenAIToolName(d.Name),
		semconv.GenAIToolCallID(d.CallID),
	}
	if d.Attempt > 1 {
		a = append(a, attrAttempt.Int(d.Attempt))
	}
	if d.Rule != "" {
		a = append(a, attrToolRule.String(d.Rule))
	}
	if d.Blocked != "" {
		a = append(a, attrBlocked.String(d.Blocked))
	}
	return a
}

// startBlocked marks the span of a call that does not run.
func startBlocked(s trace.Span, reason string) {
	setError(s, outcomeDenied, reason)
}

// spanName is "op name", or op alone for an empty name.
func spanName(op, name string) string {
	if name == "" {
		return op
	}
	return op + " " + name
}

// setError marks s failed: status error with msg, and error.type.
func setError(s trace.Span, typ, msg string) {
	if len(msg) > maxStatusMessage {
		msg = msg[:maxStatusMessage] + "..."
	}
	if typ == "" {
		typ = semconv.ErrorTypeOther.Value.AsString()
	}
	s.SetAttributes(semconv.ErrorTypeKey.String(typ))
	s.SetStatus(codes.Error, msg)
}

// endSpan ends s (nil without traces) at end; failed marks it so first.
func endSpan(s trace.Span, end time.Time, failed bool, typ, msg string) {
	if s == nil {
		return
	}
	if failed {
		setError(s, typ, msg)
	}
	s.End(trace.WithTimestamp(end))
}
