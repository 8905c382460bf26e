package otelqueuey

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuey/queuey/runtime"
)

// consumerStart is the start options of every consumer span, made once:
// the span kind only, since the attributes are set when the span ends (see
// Outcome).
var consumerStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}

// outcomeAttrs holds the queuey.outcome attribute of each outcome kind.
var outcomeAttrs = func() [runtime.OutcomeRedelivered + 1]attribute.KeyValue {
	var a [runtime.OutcomeRedelivered + 1]attribute.KeyValue
	for k := range a {
		a[k] = attribute.String("queuey.outcome", runtime.OutcomeKind(k).String())
	}
	return a
}()

func outcomeAttr(k runtime.OutcomeKind) attribute.KeyValue {
	if k < 0 || int(k) >= len(outcomeAttrs) {
		k = 0 // "unknown"
	}
	return outcomeAttrs[k]
}

// Start implements runtime.Observer: it starts the run's consumer span
// ("process <queue>") as a child of the trace context in env's headers,
// counts the run as started (and so in flight), and records its queue
// latency.
//
// The span's attributes are set when it ends, all at once with the
// outcome, rather than given to the start: that copies them once per span
// instead of four times. A sampler, and a span processor's OnStart, see
// the span's name ("process <queue>"), kind and parent, not its
// attributes.
func (in *Instrumentation) Start(ctx context.Context, env *runtime.Envelope) context.Context {
	ctx = in.prop.Extract(ctx, propagation.MapCarrier(env.Headers))
	ja := in.job(env.Queue, env.Kind)
	ctx, _ = in.tracer.Start(ctx, ja.processName, consumerStart...)
	ja.counts[cStarted].Add(1)
	if !env.EnqueuedAt.IsZero() {
		in.m.latency.Record(noExemplar, max(time.Since(env.EnqueuedAt), 0).Seconds(), ja.record...)
	}
	return ctx
}

// Outcome implements runtime.Observer: it counts the outcome, records the
// handler's duration, and ends the run's span with the outcome as its
// queuey.outcome attribute and, unless acked, as an event; its status is
// Ok when acked, Error when the handler failed, unset otherwise. A
// redelivery is an event on the span, which goes on.
func (in *Instrumentation) Outcome(ctx context.Context, o runtime.Outcome) {
	span := trace.SpanFromContext(ctx)
	ja := in.job(o.Queue, o.JobKind)
	ja.counts[counterOf(o.Kind)].Add(1)
	if !o.Kind.Settled() { // a redelivery: an event, and the run goes on
		span.AddEvent(o.Kind.String())
		return
	}
	in.m.duration.Record(noExemplar, o.HandlerDuration.Seconds(), ja.record...)
	failed := o.Err != nil && o.Kind != runtime.OutcomeDeferred
	if failed {
		ja.counts[cFailed].Add(1)
	}
	if !span.IsRecording() {
		span.End()
		return
	}
	outcome := outcomeAttr(o.Kind)
	if o.Kind != runtime.OutcomeAcked { // the status says the rest of an ack
		attrs := append(make([]attribute.KeyValue, 0, 2), outcome)
		switch o.Kind {
		case runtime.OutcomeRetried, runtime.OutcomeDeferred:
			attrs = append(attrs, attribute.Float64("queuey.job.delay", o.Delay.Seconds()))
		case runtime.OutcomeDeadLettered:
			attrs = append(attrs, attribute.String("queuey.dead_letter.reason", o.Reason))
		case runtime.OutcomeRequeued, runtime.OutcomeAbandoned:
			if o.SettleErr != nil {
				attrs = append(attrs, attribute.String("queuey.settle.error", o.SettleErr.Error()))
			}
		}
		span.AddEvent(o.Kind.String(), trace.WithAttributes(attrs...))
	}
	// One slice of the exact size, which the span copies.
	attrs := make([]attribute.KeyValue, 0, len(ja.process)+3)
	attrs = append(attrs, ja.process...)
	span.SetAttributes(append(attrs, semconv.MessagingMessageID(o.JobID), attribute.Int("queuey.job.attempt", o.Attempt), outcome)...)
	switch {
	case failed:
		span.RecordError(o.Err)
		span.SetStatus(codes.Error, o.Err.Error())
	case o.Kind == runtime.OutcomeAcked:
		span.SetStatus(codes.Ok, "")
	}
	span.End()
}
