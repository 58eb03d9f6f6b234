package pipeline

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ingestd/ingestd"
)

// The spans a pipeline records, when Options.Traces is set: one per sync
// pass, one per item under it with a child per stage, and one per batch
// write. Like the retrieval spans (package retrieval/tracing), none
// carries text: ids, kinds, counts, outcomes and error codes only.
const (
	SpanSyncPass   = "ingestd.sync.pass"   // Sync and SyncDispatch
	SpanItem       = "ingestd.item"        // one item, stamped to stored (or queued)
	SpanStamp      = "ingestd.item.stamp"  // identity, erasure gate, tier, readers
	SpanChunk      = "ingestd.item.chunk"  // chunk and fence
	SpanEmbed      = "ingestd.item.embed"  // the embedder's round trip
	SpanStore      = "ingestd.item.store"  // one document's write (Ingest)
	SpanStoreBatch = "ingestd.store.batch" // a pass's batch of writes
)

// tracerName is the instrumentation scope of the pipeline's spans.
const tracerName = "github.com/ingestd/ingestd/pipeline"

// newTracer is the tracer of tp, nil for none (tracing off).
func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(tracerName)
}

// off is the span of every stage with tracing off: it records nothing.
var off = trace.SpanFromContext(context.Background())

// start starts the span name under ctx's; with tracing off it returns
// ctx itself and a span that records nothing, so an item pays for no
// context, span or attribute on its way through the stages.
func (p *Pipeline) start(ctx context.Context, name string) (context.Context, trace.Span) {
	if p.tracer == nil {
		return ctx, off
	}
	return p.tracer.Start(ctx, name)
}

func installationAttrs(inst ingestd.Installation) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("ingestd.installation.id", inst.ID),
		attribute.String("ingestd.installation.kind", inst.Kind),
	}
}

// Every attribute is set once the span is known to record
// (span.IsRecording), so that a span a sampler drops costs none either.

// startPass starts the span of a sync pass; mode is "ingest" (Sync) or
// "dispatch" (SyncDispatch).
func (p *Pipeline) startPass(ctx context.Context, inst ingestd.Installation, mode string) (context.Context, trace.Span) {
	ctx, span := p.start(ctx, SpanSyncPass)
	if span.IsRecording() {
		span.SetAttributes(append(installationAttrs(inst), attribute.String("ingestd.sync.mode", mode))...)
	}
	return ctx, span
}

// endPass records what the pass did on its span and ends it.
func endPass(span trace.Span, sum Summary, err error) {
	if span.IsRecording() {
		span.SetAttributes(
			attribute.Int("ingestd.sync.seen", sum.Seen),
			attribute.Int("ingestd.sync.added", sum.Added),
			attribute.Int("ingestd.sync.changed", sum.Changed),
			attribute.Int("ingestd.sync.unchanged", sum.Unchanged),
			attribute.Int("ingestd.sync.deleted", sum.Deleted),
			attribute.Int("ingestd.sync.failed", sum.Failed),
			attribute.Int("ingestd.sync.skipped", sum.Skipped),
			attribute.Int("ingestd.sync.queued", sum.Queued),
			attribute.Bool("ingestd.sync.complete", sum.Complete),
		)
	}
	endSpan(span, err)
}

// startItem starts the span of one item.
func (p *Pipeline) startItem(ctx context.Context, inst ingestd.Installation, item ingestd.Item) (context.Context, trace.Span) {
	ctx, span := p.start(ctx, SpanItem)
	if span.IsRecording() {
		span.SetAttributes(append(installationAttrs(inst),
			attribute.String("ingestd.document.id", ingestd.DocumentID(inst.ID, item.ExternalID)),
			attribute.String("ingestd.item.kind", item.ItemKind))...)
	}
	return ctx, span
}

// endItem records the item's outcome on its span and ends it.
func endItem(span trace.Span, o Outcome, err error) {
	if o != "" && span.IsRecording() {
		span.SetAttributes(attribute.String("ingestd.item.outcome", string(o)))
	}
	endSpan(span, err)
}

// endSpan ends span, marked failed with err's code when there is one:
// the code only, never the message, which may quote what was ingested.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		code := ingestd.ErrorCode(err)
		span.SetStatus(codes.Error, code)
		span.SetAttributes(attribute.String("error.type", code))
	}
	span.End()
}
