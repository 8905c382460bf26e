package runtime

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Producer enqueues jobs onto a backend.
type Producer struct {
	backend Backend
	now     func() time.Time

	mu     sync.RWMutex
	queues map[string]QueueConfig // declared through this producer
}

// NewProducer returns a Producer over b after declaring queues on it.
func NewProducer(ctx context.Context, b Backend, queues ...QueueConfig) (*Producer, error) {
	p := NewProducerUndeclared(b)
	for _, q := range queues {
		if err := q.Validate(); err != nil {
			return nil, err
		}
		q = q.WithDefaults()
		if err := b.Declare(ctx, q); err != nil {
			return nil, fmt.Errorf("declare queue %q: %w", q.Name, err)
		}
		p.queues[q.Name] = q
	}
	return p, nil
}

// NewProducerUndeclared returns a Producer over b that declares nothing: the
// queues it publishes to must exist already.
func NewProducerUndeclared(b Backend) *Producer {
	return &Producer{backend: b, now: time.Now, queues: map[string]QueueConfig{}}
}

// Backend returns the backend p publishes to.
func (p *Producer) Backend() Backend { return p.backend }

// EnqueueOption changes how one job is enqueued.
type EnqueueOption func(*enqueueOptions)

type enqueueOptions struct {
	priority    int
	hasPriority bool
	delay       time.Duration
	headers     map[string]string
	id          string
}

// WithPriority enqueues the job at priority p, 0..the queue's MaxPriority.
// Higher runs first. The default is 0.
func WithPriority(p int) EnqueueOption {
	return func(o *enqueueOptions) { o.priority, o.hasPriority = p, true }
}

// WithDelay holds the job for d before its first run. d is rounded up to the
// backend's granularity and must not exceed MaxDeferral.
func WithDelay(d time.Duration) EnqueueOption {
	return func(o *enqueueOptions) { o.delay = d }
}

// WithHeaders adds string headers to the job, such as trace context. Later
// calls add to earlier ones.
func WithHeaders(h map[string]string) EnqueueOption {
	return func(o *enqueueOptions) {
		if o.headers == nil {
			o.headers = make(map[string]string, len(h))
		}
		maps.Copy(o.headers, h)
	}
}

// WithID sets the job's ID instead of a generated one. The caller keeps it
// unique.
func WithID(id string) EnqueueOption {
	return func(o *enqueueOptions) { o.id = id }
}

// EnqueuePayload enqueues an already encoded payload of kind onto q and
// returns the job's ID. Generated code calls Enqueue instead.
func (p *Producer) EnqueuePayload(ctx context.Context, q QueueConfig, payload []byte, opts ...EnqueueOption) (string, error) {
	var o enqueueOptions
	for _, opt := range opts {
		opt(&o)
	}
	p.mu.RLock()
	declared, ok := p.queues[q.Name]
	p.mu.RUnlock()
	if ok {
		q = declared
	} else {
		q = q.WithDefaults()
	}
	if o.hasPriority && (o.priority < 0 || o.priority > q.MaxPriority) {
		return "", fmt.Errorf("%w: queue %q: priority %d, want 0..%d (the queue's max_priority)", ErrInvalidOption, q.Name, o.priority, q.MaxPriority)
	}
	if o.delay < 0 {
		return "", fmt.Errorf("%w: queue %q: delay %v, want 0 or more", ErrInvalidOption, q.Name, o.delay)
	}
	id := o.id
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return "", fmt.Errorf("queuey: job id: %w", err)
		}
		id = u.String()
	}
	env := &Envelope{
		ID:          id,
		Queue:       q.Name,
		Kind:        q.Kind,
		Payload:     payload,
		Attempt:     1,
		MaxAttempts: q.MaxAttempts,
		Priority:    uint8(o.priority),
		EnqueuedAt:  p.now().UTC(),
		Headers:     o.headers,
	}
	if err := p.backend.Publish(ctx, env, o.delay); err != nil {
		return "", fmt.Errorf("enqueue %s onto %q: %w", q.Kind, q.Name, err)
	}
	return id, nil
}
