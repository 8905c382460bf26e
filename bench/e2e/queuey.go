package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// Queuey configures a run through queuey on the rabbitmq backend.
type Queuey struct {
	URL   string
	Queue string // a fresh name; the queue and its dead-letter queue are deleted afterwards
	Jobs  int
	// Producers is how many goroutines call Enqueue at once, each waiting
	// for its job's confirm. Ignored when Batch is above zero.
	Producers int
	// Batch, when above zero, enqueues from one goroutine through
	// EnqueueMany, Batch jobs per call.
	Batch int
	// Prefetch is the consumer's prefetch; zero means
	// runtime.DefaultPrefetch.
	Prefetch int
	// Concurrency is how many jobs are handled at once; zero means
	// Prefetch.
	Concurrency int
	// MaxPriority is the queue's runtime.QueueConfig.MaxPriority: zero is
	// runtime.DefaultMaxPriority, runtime.NoPriority declares none.
	MaxPriority int
	Meter       Meter
}

// Run enqueues q.Jobs jobs and handles each with a handler that does
// nothing, as generated EnqueueX (or EnqueueManyX) and HandleX do, and
// measures from the first enqueue until the last job is handled. The
// worker has declared, consumed and handled one warm-up job before.
func (q Queuey) Run(ctx context.Context) (Span, error) {
	be, cfg, p, err := q.producer(ctx)
	if err != nil {
		return Span{}, err
	}
	defer be.Close()
	defer brokertest.DeleteQueues(q.URL, q.Queue, q.Queue+rabbitmq.DefaultDeadSuffix)
	var handled atomic.Int64
	warm := make(chan struct{})
	all := make(chan struct{})
	w := runtime.NewWorker(be)
	runtime.Handle(w, cfg, func(context.Context, Job) error {
		switch handled.Add(1) {
		case 1:
			close(warm)
		case int64(q.Jobs) + 1:
			close(all)
		}
		return nil
	})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	werr := make(chan error, 1)
	go func() { werr <- w.Run(wctx) }()
	defer func() { stop(); <-werr }()
	job := NewJob()
	if _, err := runtime.Enqueue(ctx, p, cfg, job); err != nil {
		return Span{}, err
	}
	select {
	case <-warm:
	case err := <-werr:
		werr <- err
		return Span{}, fmt.Errorf("worker ended before the warm-up job: %v", err)
	case <-ctx.Done():
		return Span{}, fmt.Errorf("warm-up job not handled: %w", ctx.Err())
	}

	mark := q.Meter.Start()
	if q.Batch > 0 {
		err = enqueueBatches(ctx, p, cfg, job, q.Jobs, q.Batch)
	} else {
		err = Concurrently(q.Jobs, q.Producers, func() error {
			_, err := runtime.Enqueue(ctx, p, cfg, job)
			return err
		})
	}
	if err != nil {
		return Span{}, err
	}
	select {
	case <-all:
	case <-ctx.Done():
		return Span{}, fmt.Errorf("handled %d of %d jobs: %w", handled.Load()-1, q.Jobs, ctx.Err())
	}
	return mark.Stop(q.Jobs), nil
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// producer dials q.URL and declares q's queue through a producer.
func (q Queuey) producer(ctx context.Context) (*rabbitmq.Backend, runtime.QueueConfig, *runtime.Producer, error) {
	cfg := runtime.QueueConfig{
		Name:        q.Queue,
		Kind:        runtime.KindOf[Job](),
		Prefetch:    q.Prefetch,
		Concurrency: q.Concurrency,
		MaxPriority: q.MaxPriority,
	}.WithDefaults()
	be, err := rabbitmq.Dial(ctx, q.URL, rabbitmq.Options{Logger: quietLog})
	if err != nil {
		return nil, cfg, nil, err
	}
	p, err := runtime.NewProducer(ctx, be, cfg)
	if err != nil {
		be.Close()
		return nil, cfg, nil, err
	}
	return be, cfg, p, nil
}

// Fill enqueues q.Jobs jobs through EnqueueMany, 1,000 per call, onto a
// fresh queue that no one consumes, and leaves them there: a backlog, for
// measuring what the broker holds per waiting job. The caller deletes the
// queue and its dead-letter queue.
func (q Queuey) Fill(ctx context.Context) error {
	be, cfg, p, err := q.producer(ctx)
	if err != nil {
		return err
	}
	defer be.Close()
	return enqueueBatches(ctx, p, cfg, NewJob(), q.Jobs, 1000)
}

// Concurrently calls f n times in all from producers goroutines at once,
// as callers of a synchronous API do, and returns the first error; a
// goroutine stops at its first error.
func Concurrently(n, producers int, f func() error) error {
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		errMu sync.Mutex
		first error
	)
	for range max(producers, 1) {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := f(); err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// enqueueBatches enqueues n jobs from one goroutine, batch at a time,
// through EnqueueMany.
func enqueueBatches(ctx context.Context, p *runtime.Producer, cfg runtime.QueueConfig, job Job, n, batch int) error {
	jobs := make([]Job, 0, batch)
	for i := range n {
		jobs = append(jobs, job)
		if len(jobs) == batch || i == n-1 {
			if _, err := runtime.EnqueueMany(ctx, p, cfg, jobs); err != nil {
				return err
			}
			jobs = jobs[:0]
		}
	}
	return nil
}
