package otelqueuey

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// observeLimits registers the global limit gauges, which read lr once
// whenever metrics are collected, for queues (every limited queue lr
// finds when empty), by queue. A queue's limit gauges are observed when
// it has a Limit, its rate gauges when it has a Rate, and its key gauges
// when it has a LimitKey: as its config in queues says, or else as its
// state does (the key gauges then always). A read that fails is reported
// to otel.Handle.
func (in *Instrumentation) observeLimits(m metric.Meter, lr admin.LimitReader, queues []runtime.QueueConfig) (metric.Registration, error) {
	type gauge struct {
		g    *metric.Int64ObservableGauge
		name string
		desc string
		unit string
	}
	var tokens, inUse, waiting, rateTokens, rateReady, rateWaiting, keysHeld, keysWaiting metric.Int64ObservableGauge
	gauges := []gauge{
		{&tokens, "queuey.limit.tokens", "The global limit of a queue the backend holds: its tokens, how many of its jobs may run at once across every worker.", "{token}"},
		{&inUse, "queuey.limit.in_use", "Tokens of a queue's global limit held by running jobs.", "{token}"},
		{&waiting, "queuey.limit.waiting", "Jobs of a queue waiting for a token of its global limit.", "{job}"},
		{&rateTokens, "queuey.limit.rate.tokens", "The starts per period a queue's rate limit allows, as the backend holds it.", "{token}"},
		{&rateReady, "queuey.limit.rate.ready", "Starts a queue's rate limit allows now.", "{token}"},
		{&rateWaiting, "queuey.limit.rate.waiting", "Jobs of a queue waiting for its rate limit to allow a start.", "{job}"},
		{&keysHeld, "queuey.limit.keys.held", "Limit keys of a queue with a running job.", "{key}"},
		{&keysWaiting, "queuey.limit.keys.waiting", "Jobs of a queue waiting for their limit key.", "{job}"},
	}
	insts := make([]metric.Observable, 0, len(gauges))
	for _, g := range gauges {
		var err error
		if *g.g, err = m.Int64ObservableGauge(g.name, metric.WithDescription(g.desc), metric.WithUnit(g.unit)); err != nil {
			return nil, err
		}
		insts = append(insts, *g.g)
	}
	configs := map[string]runtime.QueueConfig{}
	for _, q := range queues {
		configs[q.Name] = q
	}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, depthTimeout)
		defer cancel()
		sts, err := lr.LimitStates(ctx, queues)
		if err != nil {
			otel.Handle(err)
			if !errors.Is(err, admin.ErrCannotList) {
				return nil
			}
		}
		for _, st := range sts {
			at := metric.WithAttributes(attribute.String("queue", st.Queue))
			cfg, known := configs[st.Queue]
			if (known && cfg.Limit > 0) || st.Limit > 0 || st.InUse > 0 || st.Waiting > 0 {
				o.ObserveInt64(tokens, int64(st.Limit), at)
				o.ObserveInt64(inUse, int64(st.InUse), at)
				o.ObserveInt64(waiting, int64(st.Waiting), at)
			}
			if (known && !cfg.Rate.IsZero()) || !st.Rate.IsZero() || st.RateReady > 0 || st.RateWaiting > 0 {
				o.ObserveInt64(rateTokens, int64(st.Rate.N), at)
				o.ObserveInt64(rateReady, int64(st.RateReady), at)
				o.ObserveInt64(rateWaiting, int64(st.RateWaiting), at)
			}
			if !known || cfg.LimitKey != "" {
				o.ObserveInt64(keysHeld, int64(st.KeysHeld), at)
				o.ObserveInt64(keysWaiting, int64(st.KeysWaiting), at)
			}
		}
		return nil
	}, insts...)
}
