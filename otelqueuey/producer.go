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

// producerStart is the start options of every producer span, made once;
// the attributes are set just after the start (see the package doc).
var producerStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}

// ProducerMiddleware returns the middleware to give runtime.Producer.Use: a
// producer span per job ("send <queue>", a child of the span in the
// enqueue's context; each job of an EnqueueMany gets its own, with
// messaging.batch.message_count), its trace context injected into the
// job's headers, and queuey.jobs.enqueued counted for each job stored.
func (in *Instrumentation) ProducerMiddleware() runtime.ProducerMiddleware {
	return func(next runtime.PublishFunc) runtime.PublishFunc {
		return func(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) []error {
			if len(envs) == 0 {
				return next(ctx, envs, delay)
			}
			ja := in.job(envs[0].Queue, envs[0].Kind)
			var batch []attribute.KeyValue
			if len(envs) > 1 {
				batch = append(batch, semconv.MessagingBatchMessageCount(len(envs)))
			}
			if delay > 0 {
				batch = append(batch, attribute.Float64("queuey.job.delay", delay.Seconds()))
			}
			var one [1]trace.Span
			spans := one[:]
			if len(envs) > 1 {
				spans = make([]trace.Span, len(envs))
			}
			for i, env := range envs {
				sctx, span := in.tracer.Start(ctx, ja.sendName, producerStart...)
				if span.IsRecording() {
					// One slice of the exact size, which the span copies.
					attrs := make([]attribute.KeyValue, 0, len(ja.send)+len(batch)+1)
					attrs = append(append(append(attrs, ja.send...), batch...), semconv.MessagingMessageID(env.ID))
					span.SetAttributes(attrs...)
				}
				in.prop.Inject(sctx, headerCarrier{env})
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
			if stored > 0 {
				ja.counts[cEnqueued].Add(int64(stored))
			}
			return errs
		}
	}
}

// headerCarrier carries trace context in an envelope's headers. It makes
// the header map only when a propagator sets a header, so that a job with
// nothing to carry (tracing off or no valid span, and no baggage) keeps no
// headers, and costs no map to make, store and decode.
type headerCarrier struct{ env *runtime.Envelope }

var _ propagation.TextMapCarrier = headerCarrier{}

// Get returns the value of header key, or "" when it has none.
func (c headerCarrier) Get(key string) string { return c.env.Headers[key] }

// Set sets header key to value.
func (c headerCarrier) Set(key, value string) {
	if c.env.Headers == nil {
		c.env.Headers = make(map[string]string, 2)
	}
	c.env.Headers[key] = value
}

// Keys returns the header names.
func (c headerCarrier) Keys() []string { return propagation.MapCarrier(c.env.Headers).Keys() }
