package otelqueuey

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// jobAttrs is what every span and measurement of one queue and kind
// share, made once, since instrumentation runs for every job.
type jobAttrs struct {
	kind        string
	measure     metric.MeasurementOption
	sendName    string
	send        []attribute.KeyValue
	processName string
	process     []attribute.KeyValue
}

// spanAttrs returns shared, extra and more in one slice of the exact size:
// the SDK copies a span's attributes once, and each WithAttributes option
// would grow its slice again.
func spanAttrs(shared, extra []attribute.KeyValue, more ...attribute.KeyValue) trace.SpanStartEventOption {
	attrs := make([]attribute.KeyValue, 0, len(shared)+len(extra)+len(more))
	attrs = append(append(append(attrs, shared...), extra...), more...)
	return trace.WithAttributes(attrs...)
}

type jobKey struct{ queue, kind string }

// job returns the shared attributes of queue and kind, and counts queue
// among those whose depth is observed. A queue carries one kind of job in
// generated code, so the attributes are looked up by queue name first (a
// string hash) and by queue and kind only when another kind shares it.
func (in *Instrumentation) job(queue, kind string) *jobAttrs {
	if ja, ok := in.byQueue.Load(queue); ok && ja.(*jobAttrs).kind == kind {
		return ja.(*jobAttrs)
	}
	k := jobKey{queue, kind}
	if ja, ok := in.attrs.Load(k); ok {
		return ja.(*jobAttrs)
	}
	in.queues.LoadOrStore(queue, struct{}{})
	common := []attribute.KeyValue{
		in.system,
		semconv.MessagingDestinationName(queue),
		semconv.MessagingRabbitMQDestinationRoutingKey(queue),
		attribute.String("queuey.job.kind", kind),
	}
	with := func(op attribute.KeyValue, name string) []attribute.KeyValue {
		return append(common[:len(common):len(common)], op, semconv.MessagingOperationName(name))
	}
	ja := &jobAttrs{
		kind:        kind,
		measure:     metric.WithAttributeSet(attribute.NewSet(attribute.String("queue", queue), attribute.String("kind", kind))),
		sendName:    "send " + queue,
		send:        with(semconv.MessagingOperationTypeSend, "enqueue"),
		processName: "process " + queue,
		process:     with(semconv.MessagingOperationTypeProcess, "handle"),
	}
	v, _ := in.attrs.LoadOrStore(k, ja)
	in.byQueue.LoadOrStore(queue, v)
	return v.(*jobAttrs)
}
