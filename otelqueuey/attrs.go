package otelqueuey

import (
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// jobAttrs is what every span and measurement of one queue and kind share,
// made once, since instrumentation runs for every job; and the job counts
// of that queue and kind, which the metrics callback reports.
type jobAttrs struct {
	queue, kind string
	// observe and record carry the attribute set {queue, kind}: an option
	// made once, and a slice of it so that passing it to Record allocates
	// nothing.
	observe metric.ObserveOption
	record  []metric.RecordOption

	sendName    string
	send        []attribute.KeyValue // every attribute of a producer span but the job's own
	processName string
	process     []attribute.KeyValue // every attribute of a consumer span but the job's own

	counts [numCounters]atomic.Int64
}

type jobKey struct{ queue, kind string }

// job returns the shared attributes of queue and kind, and counts queue
// among those whose depth is observed. A queue carries one kind of job in
// generated code, so the attributes are looked up by queue name first (a
// string hash) and by queue and kind only when another kind shares it;
// before either, those of the first queue and kind seen are tried, which
// for a process busy with one queue saves the hash (three lookups a job).
// That first one is kept, never replaced, so that processes busy with
// several queues do not all write one shared pointer.
func (in *Instrumentation) job(queue, kind string) *jobAttrs {
	first := in.first.Load()
	if first != nil && first.queue == queue && first.kind == kind {
		return first
	}
	ja := in.lookup(queue, kind)
	if first == nil {
		in.first.CompareAndSwap(nil, ja)
	}
	return ja
}

func (in *Instrumentation) lookup(queue, kind string) *jobAttrs {
	if ja, ok := in.byQueue.Load(queue); ok && ja.(*jobAttrs).kind == kind {
		return ja.(*jobAttrs)
	}
	k := jobKey{queue, kind}
	if ja, ok := in.attrs.Load(k); ok {
		return ja.(*jobAttrs)
	}
	in.seeQueue(queue, kind)
	common := []attribute.KeyValue{
		in.system,
		semconv.MessagingDestinationName(queue),
		semconv.MessagingRabbitMQDestinationRoutingKey(queue),
		attribute.String("queuey.job.kind", kind),
	}
	with := func(op attribute.KeyValue, name string) []attribute.KeyValue {
		return append(common[:len(common):len(common)], op, semconv.MessagingOperationName(name))
	}
	set := metric.WithAttributeSet(attribute.NewSet(attribute.String("queue", queue), attribute.String("kind", kind)))
	ja := &jobAttrs{
		queue:       queue,
		kind:        kind,
		observe:     set,
		record:      []metric.RecordOption{set},
		sendName:    "send " + queue,
		send:        with(semconv.MessagingOperationTypeSend, "enqueue"),
		processName: "process " + queue,
		process:     with(semconv.MessagingOperationTypeProcess, "handle"),
	}
	v, _ := in.attrs.LoadOrStore(k, ja)
	in.byQueue.LoadOrStore(queue, v)
	return v.(*jobAttrs)
}
