package otelqueuey

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/queuey/queuey/admin"
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

// count indexes the job counts of a jobAttrs, one per counter.
type count int

const (
	cEnqueued count = iota
	cStarted
	cSucceeded
	cFailed
	cRetried
	cDeferred
	cDeadLettered
	cRequeued
	cAbandoned
	cRedelivered
	numCounters // the counters above
)

// settledCounts are the counts of the settled outcomes: every run that
// started and is no longer in flight is in exactly one of them, so the
// in-flight gauge is started less their sum, and a run costs no count of
// its own going in and out of flight.
var settledCounts = func() []count {
	var cs []count
	for k := runtime.OutcomeKind(0); k <= runtime.OutcomeRedelivered; k++ {
		if c := counterOf(k); k.Settled() && !slices.Contains(cs, c) {
			cs = append(cs, c)
		}
	}
	return cs
}()

// The counters and the in-flight gauge are observable instruments over
// atomic counts kept per queue and kind: counting a job is an atomic add,
// and the SDK's aggregation runs once per collection instead of once per
// job. Only the histograms are measured per job.
type instruments struct {
	counters          [numCounters]metric.Int64ObservableCounter
	inFlight          metric.Int64ObservableUpDownCounter
	duration, latency metric.Float64Histogram
}

func newInstruments(m metric.Meter) (instruments, error) {
	var (
		ins  instruments
		errs []error
	)
	for _, c := range []struct {
		c          count
		name, desc string
	}{
		{cEnqueued, "queuey.jobs.enqueued", "Jobs stored by an enqueue."},
		{cStarted, "queuey.jobs.started", "Runs of jobs started."},
		{cSucceeded, "queuey.jobs.succeeded", "Runs that succeeded and were acked."},
		{cFailed, "queuey.jobs.failed", "Runs whose handler failed (an error other than Defer, or a panic)."},
		{cRetried, "queuey.jobs.retried", "Runs settled as a retry after a backoff."},
		{cDeferred, "queuey.jobs.deferred", "Runs settled as a deferral."},
		{cDeadLettered, "queuey.jobs.dead_lettered", "Runs settled as a dead letter."},
		{cRequeued, "queuey.jobs.requeued", "Runs whose outcome could not be recorded; the job was put back."},
		{cAbandoned, "queuey.jobs.abandoned", "Runs left unsettled, to be delivered again."},
		{cRedelivered, "queuey.jobs.redelivered", "Deliveries the backend reported as redeliveries."},
	} {
		var err error
		ins.counters[c.c], err = m.Int64ObservableCounter(c.name, metric.WithDescription(c.desc), metric.WithUnit("{job}"))
		errs = append(errs, err)
	}
	var err error
	ins.inFlight, err = m.Int64ObservableUpDownCounter("queuey.jobs.in_flight", metric.WithDescription("Runs started and not yet settled."), metric.WithUnit("{job}"))
	errs = append(errs, err)
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(durationBuckets...))
		errs = append(errs, err)
		return h
	}
	ins.duration = histogram("queuey.job.duration", "How long handlers ran.")
	ins.latency = histogram("queuey.job.queue_latency", "Time from a job's first enqueue to the start of a run.")
	return ins, errors.Join(errs...)
}

// counterOf returns the count of an outcome.
func counterOf(k runtime.OutcomeKind) count {
	switch k {
	case runtime.OutcomeAcked:
		return cSucceeded
	case runtime.OutcomeRetried:
		return cRetried
	case runtime.OutcomeDeferred:
		return cDeferred
	case runtime.OutcomeDeadLettered:
		return cDeadLettered
	case runtime.OutcomeRequeued:
		return cRequeued
	case runtime.OutcomeRedelivered:
		return cRedelivered
	default:
		return cAbandoned
	}
}

// observeCounts registers the callback that reports the job counts of
// every queue and kind seen: each counter once it is above zero (so that a
// scrape shows no series of an outcome that never happened), and in-flight
// once a run started.
func (in *Instrumentation) observeCounts(m metric.Meter) (metric.Registration, error) {
	insts := make([]metric.Observable, 0, numCounters+1)
	for _, c := range in.m.counters {
		insts = append(insts, c)
	}
	insts = append(insts, in.m.inFlight)
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		in.attrs.Range(func(_, v any) bool {
			ja := v.(*jobAttrs)
			for c, inst := range in.m.counters {
				if n := ja.counts[c].Load(); n != 0 {
					o.ObserveInt64(inst, n, ja.observe)
				}
			}
			// The settled counts are read before started: a run is
			// counted started before it is counted settled, so this
			// order never sees more runs settled than started.
			var settled int64
			for _, c := range settledCounts {
				settled += ja.counts[c].Load()
			}
			if started := ja.counts[cStarted].Load(); started != 0 {
				o.ObserveInt64(in.m.inFlight, started-settled, ja.observe)
			}
			return true
		})
		return nil
	}, insts...)
}

// seeQueue counts queue among those whose depth is observed, with kind as
// its kind label: the first kind known for it, since a queue carries one
// kind of job.
func (in *Instrumentation) seeQueue(queue, kind string) {
	if prev, loaded := in.queues.LoadOrStore(queue, kind); loaded && prev.(string) == "" && kind != "" {
		in.queues.CompareAndSwap(queue, "", kind)
	}
}

// observeDepth registers the queue depth gauge, which asks rc for every
// queue seen so far whenever metrics are collected, labelled with its
// queue and kind like every other metric. A queue rc cannot count is left
// out of that collection and reported to otel.Handle.
func (in *Instrumentation) observeDepth(m metric.Meter, rc admin.ReadyCounter) (metric.Registration, error) {
	g, err := m.Int64ObservableGauge("queuey.queue.depth", metric.WithDescription("Jobs ready on a queue: not handed to a consumer, not waiting."), metric.WithUnit("{job}"))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, depthTimeout)
		defer cancel()
		in.queues.Range(func(k, v any) bool {
			q := k.(string)
			n, err := rc.Ready(ctx, q)
			if err != nil {
				otel.Handle(err)
				return ctx.Err() == nil
			}
			o.ObserveInt64(g, int64(n), metric.WithAttributes(attribute.String("queue", q), attribute.String("kind", v.(string))))
			return true
		})
		return nil
	}, g)
}
