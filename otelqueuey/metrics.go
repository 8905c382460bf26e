package otelqueuey

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/queuey/queuey/runtime"
)

// durationBuckets are the histogram bounds in seconds: from a millisecond
// to an hour, since a queue latency includes retry waits.
var durationBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// noExemplar is the context of every measurement: one without the job's
// span, so that the SDK offers no exemplar. Offering one on every
// measurement of every job cost more than the rest of the metrics, and the
// Prometheus text format does not carry exemplars anyway.
var noExemplar = context.Background()

// depthTimeout bounds one collection of queue depths.
const depthTimeout = 5 * time.Second

type instruments struct {
	enqueued, started, succeeded, failed, retried, deferred metric.Int64Counter
	deadLettered, requeued, abandoned, redelivered          metric.Int64Counter
	inFlight                                                metric.Int64UpDownCounter
	duration, latency                                       metric.Float64Histogram
}

func newInstruments(m metric.Meter) (instruments, error) {
	var (
		ins  instruments
		errs []error
	)
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit("{job}"))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets...))
		errs = append(errs, err)
		return h
	}
	ins.enqueued = counter("queuey.jobs.enqueued", "Jobs stored by an enqueue.")
	ins.started = counter("queuey.jobs.started", "Runs of jobs started.")
	ins.succeeded = counter("queuey.jobs.succeeded", "Runs that succeeded and were acked.")
	ins.failed = counter("queuey.jobs.failed", "Runs whose handler failed (an error other than Defer, or a panic).")
	ins.retried = counter("queuey.jobs.retried", "Runs settled as a retry after a backoff.")
	ins.deferred = counter("queuey.jobs.deferred", "Runs settled as a deferral.")
	ins.deadLettered = counter("queuey.jobs.dead_lettered", "Runs settled as a dead letter.")
	ins.requeued = counter("queuey.jobs.requeued", "Runs whose outcome could not be recorded; the job was put back.")
	ins.abandoned = counter("queuey.jobs.abandoned", "Runs left unsettled, to be delivered again.")
	ins.redelivered = counter("queuey.jobs.redelivered", "Deliveries the backend reported as redeliveries.")
	var err error
	ins.inFlight, err = m.Int64UpDownCounter("queuey.jobs.in_flight", metric.WithDescription("Runs started and not yet settled."), metric.WithUnit("{job}"))
	errs = append(errs, err)
	ins.duration = histogram("queuey.job.duration", "How long handlers ran.")
	ins.latency = histogram("queuey.job.queue_latency", "Time from a job's first enqueue to the start of a run.")
	return ins, errors.Join(errs...)
}

// counter returns the counter of a settled outcome.
func (m *instruments) counter(k runtime.OutcomeKind) metric.Int64Counter {
	switch k {
	case runtime.OutcomeAcked:
		return m.succeeded
	case runtime.OutcomeRetried:
		return m.retried
	case runtime.OutcomeDeferred:
		return m.deferred
	case runtime.OutcomeDeadLettered:
		return m.deadLettered
	case runtime.OutcomeRequeued:
		return m.requeued
	case runtime.OutcomeRedelivered:
		return m.redelivered
	default:
		return m.abandoned
	}
}

// observeDepth registers the queue depth gauge, which asks rc for every
// queue seen so far whenever metrics are collected. A queue rc cannot count
// is left out of that collection and reported to otel.Handle.
func (in *Instrumentation) observeDepth(m metric.Meter, rc runtime.ReadyCounter) (metric.Registration, error) {
	g, err := m.Int64ObservableGauge("queuey.queue.depth", metric.WithDescription("Jobs ready on a queue: not handed to a consumer, not waiting."), metric.WithUnit("{job}"))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, depthTimeout)
		defer cancel()
		in.queues.Range(func(k, _ any) bool {
			q := k.(string)
			n, err := rc.Ready(ctx, q)
			if err != nil {
				otel.Handle(err)
				return ctx.Err() == nil
			}
			o.ObserveInt64(g, int64(n), metric.WithAttributes(attribute.String("queue", q)))
			return true
		})
		return nil
	}, g)
}
