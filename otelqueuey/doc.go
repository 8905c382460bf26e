// Package otelqueuey adapts queuey to OpenTelemetry: traces and metrics of
// every enqueue and every run of a job, and a Prometheus scrape endpoint for
// the metrics.
//
// It hooks into the runtime at two places, and the runtime knows nothing of
// OpenTelemetry:
//
//   - a producer middleware (runtime.Producer.Use) starts a producer span
//     per job, injects its W3C trace context into the envelope's headers and
//     counts enqueued jobs;
//   - an observer (runtime.WithObserver) extracts that context when a run
//     starts, starts a consumer span as its child, makes it the handler's
//     context, and ends it with the run's outcome: acked, retried, deferred,
//     dead-lettered, requeued after a failed settle, or abandoned.
//
// Set-up:
//
//	inst, err := otelqueuey.New(otelqueuey.Config{})  // global providers
//	producer.Use(inst.ProducerMiddleware())
//	w := runtime.NewWorker(backend,
//		runtime.WithObserver(inst),
//		runtime.WithProducer(producer), // jobs its schedules enqueue go through it too
//	)
//
// Each run of a job gets its own consumer span; since a retried or deferred
// job keeps its headers, every run of one job is a child of the same
// producer span, in one trace. A job enqueued from inside a handler gets a
// producer span that is a child of that handler's consumer span. A job
// with nothing for the propagator to carry (no valid trace context, as
// with a no-op tracer provider, and no baggage) gets no header from this
// package, not even an empty map.
//
// Metrics (OpenTelemetry names; the Prometheus exporter adds the unit and
// _total suffixes), each with the attributes queue and kind:
//
//	queuey.jobs.enqueued       jobs stored by an enqueue
//	queuey.jobs.started        runs started
//	queuey.jobs.succeeded      runs acked
//	queuey.jobs.failed         runs whose handler returned an error other than Defer, or panicked
//	queuey.jobs.retried        runs settled as a retry
//	queuey.jobs.deferred       runs settled as a deferral
//	queuey.jobs.dead_lettered  runs settled as a dead letter
//	queuey.jobs.requeued       runs whose settle failed and whose job was put back
//	queuey.jobs.abandoned      runs left unsettled, to be delivered again
//	queuey.jobs.redelivered    deliveries the backend reported as redeliveries
//	queuey.jobs.in_flight      runs started and not yet settled
//	queuey.job.duration        handler run time, seconds (histogram)
//	queuey.job.queue_latency   first enqueue to start of the run, seconds (histogram)
//	queuey.queue.depth         jobs ready on a queue (only with Config.Depth)
//
// With Config.Outbox, gauges of a transactional outbox, with the
// attributes queue and kind too:
//
//	queuey.outbox.pending      jobs committed and not yet published
//	queuey.outbox.retrying     of them, jobs the backend refused for now (a queue not declared yet)
//	queuey.outbox.dead         jobs the relay could not publish, set aside
//	queuey.outbox.oldest_age   age of the oldest pending job, seconds
//
// With Config.Limits, gauges of the global limits (runtime.QueueConfig's
// Limit, Rate and LimitKey), with the attribute queue only:
//
//	queuey.limit.tokens        the Limit the backend holds: its tokens
//	queuey.limit.in_use        of them, tokens held by running jobs
//	queuey.limit.waiting       jobs waiting for a token
//	queuey.limit.rate.tokens   the Rate's starts per period the backend holds
//	queuey.limit.rate.ready    starts the Rate allows now
//	queuey.limit.rate.waiting  jobs waiting for the Rate to allow a start
//	queuey.limit.keys.held     limit keys with a running job
//	queuey.limit.keys.waiting  jobs waiting for their limit key
//
// A failed run is counted twice, by design: once as failed and once as the
// way it was settled (retried or dead_lettered). The counters and the
// in-flight gauge are observable instruments over counts kept per queue
// and kind, read when metrics are collected, so counting a job costs an
// atomic add; a counter's series appears once it is above zero. The
// histograms are recorded without the job's span in their context, so the
// SDK attaches no exemplars to them.
//
// Span attributes: a producer span gets its attributes just after it
// starts, a consumer span when it ends, together with queuey.outcome;
// neither passes them to the start, which would copy them twice more per
// span. So a sampler (or a span processor's OnStart) sees a span's name,
// kind and parent, not its attributes.
package otelqueuey
