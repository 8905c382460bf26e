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
	measure     metric.MeasurementOption
	sendName    string
	send        trace.SpanStartOption
	processName string
	process     trace.SpanStartOption
}

type jobKey struct{ queue, kind string }

// job returns the shared attributes of queue and kind, and counts queue
// among those whose depth is observed.
func (in *Instrumentation) job(queue, kind string) *jobAttrs {
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
	with := func(op attribute.KeyValue, name string) trace.SpanStartOption {
		return trace.WithAttributes(append(common[:len(common):len(common)], op, semconv.MessagingOperationName(name))...)
	}
	ja := &jobAttrs{
		measure:     metric.WithAttributeSet(attribute.NewSet(attribute.String("queue", queue), attribute.String("kind", kind))),
		sendName:    "send " + queue,
		send:        with(semconv.MessagingOperationTypeSend, "enqueue"),
		processName: "process " + queue,
		process:     with(semconv.MessagingOperationTypeProcess, "handle"),
	}
	v, _ := in.attrs.LoadOrStore(k, ja)
	return v.(*jobAttrs)
}
