package otelqueuey

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/queuey/queuey/admin"
)

// outboxTimeout bounds one read of the outbox's stats.
const outboxTimeout = 5 * time.Second

// observeOutbox registers the outbox gauges, which read ob once whenever
// metrics are collected: per queue, its pending, retrying and dead rows
// and the age of its oldest pending row, by queue and kind. A read that fails is reported to
// otel.Handle, and that collection has no outbox gauges.
func (in *Instrumentation) observeOutbox(m metric.Meter, ob admin.OutboxReader) (metric.Registration, error) {
	var errs []error
	gauge := func(name, desc string) metric.Int64ObservableGauge {
		g, err := m.Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit("{job}"))
		errs = append(errs, err)
		return g
	}
	pending := gauge("queuey.outbox.pending", "Jobs committed to the outbox and not yet published, retrying ones included.")
	retrying := gauge("queuey.outbox.retrying", "Jobs in the outbox the backend refused for now (a queue not declared yet), tried again.")
	dead := gauge("queuey.outbox.dead", "Jobs the outbox's relay could not publish, set aside in queuey_outbox_dead.")
	oldest, err := m.Float64ObservableGauge("queuey.outbox.oldest_age", metric.WithDescription("Age of the oldest job pending in the outbox, since its insert."), metric.WithUnit("s"))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, outboxTimeout)
		defer cancel()
		s, err := ob.OutboxStats(ctx)
		if err != nil {
			otel.Handle(err)
			return nil
		}
		for _, q := range s.Queues {
			at := metric.WithAttributes(attribute.String("queue", q.Queue), attribute.String("kind", q.Kind))
			o.ObserveInt64(pending, q.Pending, at)
			o.ObserveInt64(retrying, q.Retrying, at)
			o.ObserveInt64(dead, q.Dead, at)
			o.ObserveFloat64(oldest, q.OldestAge.Seconds(), at)
		}
		return nil
	}, pending, retrying, dead, oldest)
}
