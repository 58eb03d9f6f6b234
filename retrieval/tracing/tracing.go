// Package tracing wraps an ingestd.Retriever with OpenTelemetry spans, a
// decorator at the edge like retrieval/metrics: every surface that serves
// the wrapped Retriever (HTTP, Connect, gRPC, MCP) is traced alike. Its
// Provider is also what the pipeline records its sync-pass and
// item-stage spans with (package pipeline, trace.go).
//
// Each retrieval is a span, ingestd.retrieve, with what the answer holds
// (how many chunks each block has, the grounding, the request id) and,
// as its child, a guardrail span for the verdict in the shape the
// OpenTelemetry GenAI proposal for guardrails gives (an in-process
// run_guardrail span; gen_ai.security.verdict.type for what the firewall
// judged, gen_ai.security.action.type for what was enforced, recorded
// apart, so shadow mode reads "deny, allowed"). Those names are
// experimental: the proposal is not merged, and they follow it.
//
// No span carries text: neither the query nor any document's title or
// text, only counts, ids, tiers and the verdict.
//
// Tracing is off unless configured: Environment reads the standard
// OTLP variables and exports over OTLP/HTTP (protobuf) when one names an
// endpoint.
package tracing

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ingestd/ingestd"
)

// GuardrailName names ingestd's guardrail in the guardrail spans.
const GuardrailName = "ingestd.tool_firewall"

// Attribute keys of the guardrail span, from the GenAI guardrail
// proposal (experimental).
const (
	attrOperation    = attribute.Key("gen_ai.operation.name")
	attrGuardrail    = attribute.Key("gen_ai.security.guardrail.name")
	attrTarget       = attribute.Key("gen_ai.security.target.type")
	attrVerdictType  = attribute.Key("gen_ai.security.verdict.type")
	attrVerdictCode  = attribute.Key("gen_ai.security.verdict.code")
	attrActionType   = attribute.Key("gen_ai.security.action.type")
	attrMode         = attribute.Key("ingestd.firewall.mode")
	attrToolsAllowed = attribute.Key("ingestd.verdict.tools_allowed")
	attrUntrusted    = attribute.Key("ingestd.verdict.untrusted_document_ids")
	attrClasses      = attribute.Key("ingestd.verdict.allowed_tool_classes")
)

// Tracing is a tracer provider exporting the spans it is given. A nil
// *Tracing is tracing switched off: Wrap returns the Retriever it is
// given and Shutdown does nothing.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// Environment returns the tracing the environment configures, read
// through getenv, or nil when it configures none:
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL) or
// OTEL_EXPORTER_OTLP_ENDPOINT (to which /v1/traces is added) names the
// collector, spoken to over OTLP/HTTP with protobuf; the exporter reads
// the other OTEL_EXPORTER_OTLP_* variables (headers, timeout,
// compression, certificate) as the OpenTelemetry specification says.
// OTEL_SDK_DISABLED=true switches it off.
func Environment(ctx context.Context, version string, getenv func(string) string) (*Tracing, error) {
	if getenv("OTEL_SDK_DISABLED") == "true" {
		return nil, nil
	}
	endpoint := getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if endpoint == "" {
		if base := getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); base != "" {
			endpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
		}
	}
	if endpoint == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	return New(exp, version), nil
}

// New returns tracing that exports through exp, in batches.
func New(exp sdktrace.SpanExporter, version string) *Tracing {
	res := resource.NewSchemaless(attribute.String("service.name", "ingestd"), attribute.String("service.version", version))
	return &Tracing{tp: sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithResource(res),
	)}
}

// Shutdown exports the spans not exported yet and stops.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Provider is the tracer provider for the daemon's other spans (the
// pipeline's sync passes and item stages); nil with tracing off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tp
}

// Wrap returns next traced; with tracing off, next itself.
func (t *Tracing) Wrap(next ingestd.Retriever) ingestd.Retriever {
	if t == nil {
		return next
	}
	return &Retriever{next: next, tracer: t.tp.Tracer("github.com/ingestd/ingestd/retrieval/tracing")}
}

var _ ingestd.Retriever = (*Retriever)(nil)

// Retriever is an ingestd.Retriever whose retrievals are traced. It
// never changes an answer.
type Retriever struct {
	next   ingestd.Retriever
	tracer trace.Tracer
}

// Retrieve asks the wrapped Retriever inside an ingestd.retrieve span
// (a child of the caller's span, or of the traceparent the request
// carried) and records the verdict as a guardrail span under it.
func (r *Retriever) Retrieve(ctx context.Context, req ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
	ctx, span := r.tracer.Start(ctx, "ingestd.retrieve", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.Int("ingestd.request.top_k", req.TopK),
			attribute.StringSlice("ingestd.request.installations", req.Installations),
			attribute.Bool("ingestd.request.exclude_untrusted", req.ExcludeUntrusted),
			attribute.Bool("ingestd.request.trusted_view", req.TrustedView),
			attribute.String("ingestd.request.grounding", req.Grounding),
		))
	defer span.End()
	resp, err := r.next.Retrieve(ctx, req)
	if err != nil {
		// The code only: a message may quote what the caller sent.
		span.SetStatus(codes.Error, ingestd.ErrorCode(err))
		span.SetAttributes(attribute.String("error.type", ingestd.ErrorCode(err)))
		return nil, err
	}
	span.SetAttributes(
		attribute.String("ingestd.request_id", resp.RequestID),
		attribute.String("ingestd.grounding", resp.Grounding),
		attribute.Int("ingestd.excluded_untrusted_documents", resp.ExcludedUntrustedDocuments),
	)
	span.SetAttributes(blocks("ingestd.blocks.", resp.Primary, resp.Expanded, resp.Rejected)...)
	r.guardrail(ctx, "retrieval_result", resp.Verdict)
	if tv := resp.TrustedView; tv != nil {
		span.SetAttributes(blocks("ingestd.trusted_view.blocks.", tv.Primary, tv.Expanded, tv.Rejected)...)
		r.guardrail(ctx, "retrieval_result.trusted_view", tv.Verdict)
	}
	return resp, nil
}

// blocks counts the chunks of each block, and of each tier in force.
func blocks(prefix string, primary, expanded, rejected []ingestd.ServedChunk) []attribute.KeyValue {
	tiers := map[string]int{}
	for _, b := range [][]ingestd.ServedChunk{primary, expanded, rejected} {
		for _, c := range b {
			tiers[c.Tier]++
		}
	}
	kv := []attribute.KeyValue{
		attribute.Int(prefix+"primary", len(primary)),
		attribute.Int(prefix+"expanded", len(expanded)),
		attribute.Int(prefix+"rejected", len(rejected)),
	}
	for tier, n := range tiers {
		kv = append(kv, attribute.Int(prefix+"tier."+tier, n))
	}
	return kv
}

// guardrail records the verdict as the proposal's in-process guardrail
// span. What the firewall judged (deny: the grounding holds untrusted
// text) and what was enforced (block, or allow in shadow and off mode)
// are two attributes, as the proposal keeps them.
func (r *Retriever) guardrail(ctx context.Context, target string, v *ingestd.Verdict) {
	_, span := r.tracer.Start(ctx, "run_guardrail "+GuardrailName, trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	if v == nil {
		// An answer without a verdict allows no tools (the client's gate).
		span.SetAttributes(attrOperation.String("run_guardrail"), attrGuardrail.String(GuardrailName), attrTarget.String(target),
			attrActionType.String("block"), attrToolsAllowed.Bool(false))
		span.SetStatus(codes.Error, "no verdict")
		return
	}
	judged := "allow"
	if v.WouldBlock || !v.ToolsAllowed {
		judged = "deny"
	}
	// block: not every tool class is allowed (what is, is in
	// ingestd.verdict.allowed_tool_classes).
	action := "allow"
	if !v.ToolsAllowed {
		action = "block"
	}
	span.SetAttributes(
		attrOperation.String("run_guardrail"),
		attrGuardrail.String(GuardrailName),
		attrTarget.String(target),
		attrVerdictType.String(judged),
		attrVerdictCode.String(v.Reason),
		attrActionType.String(action),
		attrMode.String(v.Mode),
		attrToolsAllowed.Bool(v.ToolsAllowed),
		attrUntrusted.StringSlice(v.UntrustedDocumentIDs),
		attrClasses.StringSlice(classes(v.AllowedToolClasses)),
	)
}

func classes(cs ingestd.ToolClasses) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// Provenance asks the wrapped Retriever inside an ingestd.provenance span.
func (r *Retriever) Provenance(ctx context.Context, req ingestd.ProvenanceRequest) (ingestd.ProvenanceReport, error) {
	ctx, span := r.tracer.Start(ctx, "ingestd.provenance")
	defer span.End()
	rep, err := r.next.Provenance(ctx, req)
	if err != nil {
		span.SetStatus(codes.Error, ingestd.ErrorCode(err))
	}
	return rep, err
}
