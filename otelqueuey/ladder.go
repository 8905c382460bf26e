package otelqueuey

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/queuey/queuey/admin"
)

// observeLadders registers the delay ladder gauges, which read la once
// whenever metrics are collected: per ladder, the waits on its levels and
// its unrouted waits (whose queue was deleted while they waited), by
// ladder and queue type. A read that fails is reported to otel.Handle;
// the ladders it could find are measured all the same.
func (in *Instrumentation) observeLadders(m metric.Meter, la admin.LadderAdmin) (metric.Registration, error) {
	waiting, err := m.Int64ObservableGauge("queuey.ladder.waiting", metric.WithDescription("Waits on a delay ladder's levels, of every ladder-mode queue of its type."), metric.WithUnit("{job}"))
	if err != nil {
		return nil, err
	}
	unrouted, err := m.Int64ObservableGauge("queuey.ladder.unrouted", metric.WithDescription("Waits in a delay ladder's unrouted queue: their queue was deleted while they waited. queuey ladder redrive puts them back."), metric.WithUnit("{job}"))
	if err != nil {
		return nil, err
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, depthTimeout)
		defer cancel()
		ls, err := la.Ladders(ctx)
		if err != nil {
			otel.Handle(err)
			if !errors.Is(err, admin.ErrCannotList) {
				return nil
			}
		}
		for _, l := range ls {
			at := metric.WithAttributes(attribute.String("ladder", l.Name), attribute.String("queue_type", l.QueueType))
			o.ObserveInt64(waiting, int64(l.Waiting), at)
			o.ObserveInt64(unrouted, int64(l.Unrouted), at)
		}
		return nil
	}, waiting, unrouted)
}
