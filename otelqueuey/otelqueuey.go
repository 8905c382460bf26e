package otelqueuey

import (
	"cmp"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/queuey/queuey/otelqueuey"

// SystemDefault is messaging.system when Config.System is empty.
const SystemDefault = "rabbitmq"

// Config says where telemetry goes. Its zero value uses OpenTelemetry's
// global providers and W3C trace context.
type Config struct {
	// TracerProvider makes the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Propagator carries trace context in job headers; nil means W3C trace
	// context and baggage.
	Propagator propagation.TextMapPropagator
	// System is the messaging.system attribute of spans; empty means
	// SystemDefault ("rabbitmq"). Set it to name another backend.
	System string
	// Depth, when set, is asked for the number of ready jobs of each queue
	// this instrumentation has seen (and of DepthQueues) whenever metrics
	// are collected: the queuey.queue.depth gauge. Both backends implement
	// admin.ReadyCounter; on RabbitMQ each count is one passive declare.
	Depth admin.ReadyCounter
	// DepthQueues are queues to count from the start, before any of their
	// jobs is enqueued or handled here. Each config's Kind is the kind
	// label of its depth (empty until a job of the queue is seen here
	// when it has none).
	DepthQueues []runtime.QueueConfig
	// Outbox, when set, is read whenever metrics are collected: the
	// queuey.outbox.* gauges of a transactional outbox's backlog and dead
	// rows, by queue (outbox.StatsReader makes one of a database pool).
	// Each collection is one read of the outbox's tables.
	Outbox admin.OutboxReader
	// Ladders, when set, is read whenever metrics are collected: the
	// queuey.ladder.waiting and queuey.ladder.unrouted gauges of each
	// delay ladder (delay=ladder), by ladder and queue type. The RabbitMQ
	// backend implements admin.LadderAdmin, at a few passive declares per
	// ladder and a listing of the management API's; the memory backend
	// has no ladder.
	Ladders admin.LadderAdmin
	// Limits, when set, is read whenever metrics are collected: the
	// queuey.limit.* gauges of the global limits (runtime.QueueConfig's
	// Limit, Rate and LimitKey) of LimitQueues, or of every limited queue
	// the backend finds when LimitQueues is empty, by queue. The RabbitMQ
	// backend implements admin.LimitReader at two listings of the
	// management API's (queues, consumers) per collection.
	Limits admin.LimitReader
	// LimitQueues are the queues whose global limits Limits reads; their
	// configs say which limits each has. Empty means every limited queue
	// the backend finds by itself (admin.LimitReader): on RabbitMQ, those
	// on the broker; a backend that finds none (the memory backend) needs
	// them named here.
	LimitQueues []runtime.QueueConfig
}

// Instrumentation traces and measures a Producer through
// ProducerMiddleware and a Worker as its runtime.Observer. It is safe for
// concurrent use; one Instrumentation can serve any number of producers and
// workers.
type Instrumentation struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	system attribute.KeyValue
	m      instruments
	depth  metric.Registration // nil without Config.Depth
	outbox metric.Registration // nil without Config.Outbox
	ladder metric.Registration // nil without Config.Ladders
	limits metric.Registration // nil without Config.Limits

	attrs   sync.Map                 // jobKey -> *jobAttrs
	byQueue sync.Map                 // queue name -> *jobAttrs of the first kind seen on it
	queues  sync.Map                 // queue name -> its kind ("" until known), for the depth gauge
	first   atomic.Pointer[jobAttrs] // of the first queue and kind seen; see job
}

var _ runtime.Observer = (*Instrumentation)(nil)

// New returns an Instrumentation over cfg's providers. It fails only when
// the meter provider refuses an instrument.
func New(cfg Config) (*Instrumentation, error) {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	prop := cfg.Propagator
	if prop == nil {
		prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	in := &Instrumentation{
		tracer: tp.Tracer(ScopeName),
		prop:   prop,
		system: semconv.MessagingSystemKey.String(cmp.Or(cfg.System, SystemDefault)),
	}
	meter := mp.Meter(ScopeName)
	m, err := newInstruments(meter)
	if err != nil {
		return nil, fmt.Errorf("otelqueuey: %w", err)
	}
	in.m = m
	if _, err := in.observeCounts(meter); err != nil {
		return nil, fmt.Errorf("otelqueuey: %w", err)
	}
	if cfg.Depth != nil {
		for _, q := range cfg.DepthQueues {
			in.seeQueue(q.Name, q.Kind)
		}
		if in.depth, err = in.observeDepth(meter, cfg.Depth); err != nil {
			return nil, fmt.Errorf("otelqueuey: %w", err)
		}
	}
	if cfg.Outbox != nil {
		if in.outbox, err = in.observeOutbox(meter, cfg.Outbox); err != nil {
			return nil, fmt.Errorf("otelqueuey: %w", err)
		}
	}
	if cfg.Ladders != nil {
		if in.ladder, err = in.observeLadders(meter, cfg.Ladders); err != nil {
			return nil, fmt.Errorf("otelqueuey: %w", err)
		}
	}
	if cfg.Limits != nil {
		if in.limits, err = in.observeLimits(meter, cfg.Limits, cfg.LimitQueues); err != nil {
			return nil, fmt.Errorf("otelqueuey: %w", err)
		}
	}
	return in, nil
}

// Close stops counting queue depth and reading the outbox, the ladders
// and the global limits. Spans and
// counters keep working. Close is safe to call twice.
func (in *Instrumentation) Close() error {
	var errs []error
	for _, r := range []*metric.Registration{&in.depth, &in.outbox, &in.ladder, &in.limits} {
		if *r != nil {
			errs = append(errs, (*r).Unregister())
			*r = nil
		}
	}
	return errors.Join(errs...)
}
