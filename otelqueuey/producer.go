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

// ProducerMiddleware returns the middleware to give runtime.Producer.Use: a
// producer span per job ("send <queue>", a child of the span in the
// enqueue's context), its trace context injected into the job's headers,
// and queuey.jobs.enqueued counted for each job stored.
func (in *Instrumentation) ProducerMiddleware() runtime.ProducerMiddleware {
	return func(next runtime.PublishFunc) runtime.PublishFunc {
		return func(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) []error {
			spans := make([]trace.Span, len(envs))
			for i, env := range envs {
				sctx, span := in.tracer.Start(ctx, "send "+env.Queue,
					trace.WithSpanKind(trace.SpanKindProducer),
					trace.WithAttributes(in.spanAttrs(env, semconv.MessagingOperationTypeSend, "enqueue", len(envs), delay)...))
				if env.Headers == nil {
					env.Headers = make(map[string]string, 2)
				}
				in.prop.Inject(sctx, propagation.MapCarrier(env.Headers))
				spans[i] = span
			}
			errs := next(ctx, envs, delay)
			stored := 0
			for i, span := range spans {
				if i < len(errs) && errs[i] != nil {
					span.RecordError(errs[i])
					span.SetStatus(codes.Error, errs[i].Error())
				} else {
					stored++
				}
				span.End()
			}
			if len(envs) > 0 && stored > 0 {
				in.m.enqueued.Add(ctx, int64(stored), in.measure(envs[0].Queue, envs[0].Kind))
			}
			return errs
		}
	}
}

// spanAttrs returns the messaging attributes of env's span.
func (in *Instrumentation) spanAttrs(env *runtime.Envelope, op attribute.KeyValue, opName string, batch int, delay time.Duration) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		in.system,
		op,
		semconv.MessagingOperationName(opName),
		semconv.MessagingDestinationName(env.Queue),
		semconv.MessagingRabbitMQDestinationRoutingKey(env.Queue),
		semconv.MessagingMessageID(env.ID),
		attribute.String("queuey.job.kind", env.Kind),
		attribute.Int("queuey.job.attempt", env.Attempt),
		attribute.Int("queuey.job.max_attempts", env.MaxAttempts),
	}
	if batch > 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(batch))
	}
	if delay > 0 {
		attrs = append(attrs, attribute.Float64("queuey.job.delay", delay.Seconds()))
	}
	return attrs
}
