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

// Start implements runtime.Observer: it starts the run's consumer span
// ("process <queue>") as a child of the trace context in env's headers,
// counts the run as started and in flight, and records its queue latency.
func (in *Instrumentation) Start(ctx context.Context, env *runtime.Envelope) context.Context {
	ctx = in.prop.Extract(ctx, propagation.MapCarrier(env.Headers))
	ja := in.job(env.Queue, env.Kind)
	ctx, _ = in.tracer.Start(ctx, ja.processName, consumerKind,
		spanAttrs(ja.process, nil, semconv.MessagingMessageID(env.ID), attribute.Int("queuey.job.attempt", env.Attempt)))
	mo := ja.measure
	in.m.started.Add(noExemplar, 1, mo)
	in.m.inFlight.Add(noExemplar, 1, mo)
	if !env.EnqueuedAt.IsZero() {
		in.m.latency.Record(noExemplar, max(time.Since(env.EnqueuedAt), 0).Seconds(), mo)
	}
	return ctx
}

// Outcome implements runtime.Observer: it counts the outcome, records the
// handler's duration, and ends the run's span with the outcome as its
// queuey.outcome attribute and, unless acked, as an event; its status is Ok
// when acked, Error when the handler failed, unset otherwise. A redelivery is an event on the span, which goes on.
func (in *Instrumentation) Outcome(ctx context.Context, o runtime.Outcome) {
	span := trace.SpanFromContext(ctx)
	mo := in.job(o.Queue, o.JobKind).measure
	in.m.counter(o.Kind).Add(noExemplar, 1, mo)
	if o.Kind == runtime.OutcomeRedelivered {
		span.AddEvent("redelivered")
		return
	}
	in.m.inFlight.Add(noExemplar, -1, mo)
	in.m.duration.Record(noExemplar, o.HandlerDuration.Seconds(), mo)
	attrs := []attribute.KeyValue{attribute.String("queuey.outcome", o.Kind.String())}
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
	if o.Kind == runtime.OutcomeAcked {
		span.SetAttributes(attrs[0]) // the status says the rest
	} else {
		span.AddEvent(o.Kind.String(), trace.WithAttributes(attrs...))
		span.SetAttributes(attrs[0])
	}
	switch {
	case o.Err != nil && o.Kind != runtime.OutcomeDeferred:
		in.m.failed.Add(noExemplar, 1, mo)
		span.RecordError(o.Err)
		span.SetStatus(codes.Error, o.Err.Error())
	case o.Kind == runtime.OutcomeAcked:
		span.SetStatus(codes.Ok, "")
	}
	span.End()
}
