package runtime

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxJobSize is the largest job, its payload and headers together, in
// bytes, that a producer enqueues on any backend: 512 MiB, the most any
// RabbitMQ broker takes in one message, whatever its max_message_size says.
// A larger job is refused with ErrTooLarge before the backend sees it. A
// backend may refuse less: the RabbitMQ backend refuses a job over its
// broker's max message size (128 MiB by default on RabbitMQ 3.x, 16 MiB on
// 4.x).
const MaxJobSize = 512 << 20

// Producer enqueues jobs onto a backend.
type Producer struct {
	backend Backend
	now     func() time.Time

	mu       sync.RWMutex
	queues   map[string]QueueConfig // declared through this producer
	targeted map[string]struct{}    // told to the backend for waits (WaitTargeter)
	publish  PublishFunc            // middleware around the backend; nil without Use
}

// NewProducer returns a Producer over b after declaring queues on it.
func NewProducer(ctx context.Context, b Backend, queues ...QueueConfig) (*Producer, error) {
	p := NewProducerUndeclared(b)
	declared := make([]QueueConfig, 0, len(queues))
	for _, q := range queues {
		if err := q.Validate(); err != nil {
			return nil, err
		}
		declared = append(declared, q.WithDefaults())
	}
	if err := declareAll(ctx, b, declared); err != nil {
		return nil, err
	}
	for _, q := range declared {
		p.queues[q.Name] = q
	}
	return p, nil
}

// NewProducerUndeclared returns a Producer over b that declares nothing: the
// queues it publishes to must exist already. Both backends agree on what
// that means: a queue declared by anyone on the same backend (on RabbitMQ,
// by any process on the broker; in memory, through the same
// MemoryBackend) takes jobs at once, and an enqueue onto a queue that does
// not exist is ErrUnknownQueue, with how to declare it. An enqueue with
// WithDelay holds the job as the config given to it says (on RabbitMQ: the
// queue's type and delay mode pick its hold queues or delay exchange),
// after checking once that the queue exists (WaitTargeter).
func NewProducerUndeclared(b Backend) *Producer {
	return &Producer{backend: b, now: time.Now, queues: map[string]QueueConfig{}}
}

// EnqueueOption changes how one job is enqueued.
type EnqueueOption func(*enqueueOptions)

type enqueueOptions struct {
	priority    int
	hasPriority bool
	delay       time.Duration
	headers     map[string]string
	tick        string // HeaderTick's value, set by schedules only
	id          string
	hasID       bool
}

// WithPriority enqueues the job at priority p, 0..the queue's MaxPriority
// (only 0 on a queue of NoPriority). Higher runs first. The default is 0.
func WithPriority(p int) EnqueueOption {
	return func(o *enqueueOptions) { o.priority, o.hasPriority = p, true }
}

// WithDelay holds the job for d before its first run. d is rounded up to the
// backend's granularity and must not exceed MaxDeferral.
func WithDelay(d time.Duration) EnqueueOption {
	return func(o *enqueueOptions) { o.delay = d }
}

// WithHeaders adds string headers to the job, such as trace context. Later
// calls add to earlier ones. A name that starts with ReservedHeaderPrefix
// ("queuey-") is queuey's own, and names and values must be valid UTF-8:
// otherwise the enqueue is refused with ErrInvalidOption.
func WithHeaders(h map[string]string) EnqueueOption {
	return func(o *enqueueOptions) {
		if o.headers == nil {
			o.headers = make(map[string]string, len(h))
		}
		maps.Copy(o.headers, h)
	}
}

// withTick sets HeaderTick, a reserved header, to tick: only a schedule
// sets it.
func withTick(tick time.Time) EnqueueOption {
	return func(o *enqueueOptions) { o.tick = tick.UTC().Format(time.RFC3339) }
}

// WithID sets the job's ID instead of a generated one: a label the caller
// chooses, carried unchanged through retries, deferrals, dead letters and
// re-drives, for an idempotency key the handler checks (Info.ID) or for
// tracing. It is never checked for uniqueness, on any backend or in the
// outbox: two enqueues with one ID are two jobs, each run, and each a dead
// letter of its own if it dies. An id that CheckJobID refuses (empty, over
// MaxJobIDLen bytes, not UTF-8) is refused with ErrInvalidOption at
// enqueue, on every backend: leave WithID out for a generated ID, which is
// unique.
func WithID(id string) EnqueueOption {
	return func(o *enqueueOptions) { o.id, o.hasID = id, true }
}

// enqueuePayload enqueues an already encoded payload onto q and returns the
// job's ID; the payload stays the caller's.
func (p *Producer) enqueuePayload(ctx context.Context, q QueueConfig, payload []byte, opts ...EnqueueOption) (string, error) {
	return p.enqueue(ctx, q, payload, false, opts)
}

// enqueue enqueues payload onto q; owned says that nobody else holds
// payload, so a backend may keep it without a copy.
func (p *Producer) enqueue(ctx context.Context, q QueueConfig, payload []byte, owned bool, opts []EnqueueOption) (string, error) {
	o, q, err := p.options(q, opts)
	if err != nil {
		return "", err
	}
	if err := p.targetWaits(ctx, q, o); err != nil {
		return "", fmt.Errorf("enqueue %s onto %q: %w", q.Kind, q.Name, err)
	}
	env, err := p.envelope(q, o, payload)
	if err != nil {
		return "", err
	}
	if err := checkSize(env, headersSize(env.Headers)); err != nil {
		return "", fmt.Errorf("enqueue %s onto %q: %w", q.Kind, q.Name, err)
	}
	p.mu.RLock()
	chain := p.publish
	p.mu.RUnlock()
	// A backend that keeps envelopes (not a wrapper of one, whose Publish
	// must see every job), when no middleware stands between, keeps the
	// envelope without the copy Publish makes: it was built here and
	// nothing touches it again.
	if ob, ok := p.backend.(ownedPublisher); ok && chain == nil && ob.keeper() == p.backend {
		if !owned {
			env.Payload = bytes.Clone(payload)
		}
		err = ob.publishOwned(ctx, env, o.delay)
	} else {
		err = p.publisher()(ctx, []*Envelope{env}, o.delay)[0]
	}
	if err != nil {
		return "", fmt.Errorf("enqueue %s onto %q: %w", q.Kind, q.Name, err)
	}
	return env.ID, nil
}

// enqueuePayloads enqueues already encoded payloads onto q, with the same
// options for each, keeping many publishes in flight where the backend can
// (BatchPublisher). It returns every job's ID, in order, and a *BatchError
// naming the jobs that were not enqueued, if any. WithID is refused: IDs
// must differ.
func (p *Producer) enqueuePayloads(ctx context.Context, q QueueConfig, payloads [][]byte, opts ...EnqueueOption) ([]string, error) {
	o, q, err := p.options(q, opts)
	if err != nil {
		return nil, err
	}
	if err := p.targetWaits(ctx, q, o); err != nil {
		return nil, fmt.Errorf("enqueue %s onto %q: %w", q.Kind, q.Name, err)
	}
	if o.hasID {
		return nil, fmt.Errorf("%w: queue %q: WithID with several jobs, whose IDs must differ", ErrInvalidOption, q.Name)
	}
	if err := p.check(q, o); err != nil {
		return nil, err
	}
	ids, err := newIDs(len(payloads))
	if err != nil {
		return nil, err
	}
	// One allocation for the batch's envelopes, as for its IDs.
	all := make([]Envelope, len(payloads))
	envs := make([]*Envelope, len(payloads))
	now := p.now().UTC()
	for i, payload := range payloads {
		envs[i] = &all[i]
		p.fill(envs[i], q, o, ids[i], payload, now)
	}
	errs := p.publishSized(ctx, envs, headersSize(o.headers), o.delay)
	failed := false
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("enqueue %s onto %q: %w", q.Kind, q.Name, err)
			failed = true
		}
	}
	if failed {
		return ids, &BatchError{Errs: errs}
	}
	return ids, nil
}

// options applies opts and returns them with q as this producer declared it
// (or with its defaults), but with q's own kind: a producer never changes
// a job's kind. A q of another kind than the one declared under its name
// is ErrKindConflict, and one that differs from it in what an enqueue
// depends on (producerMismatch) is ErrQueueMismatch, before anything is
// published: the declared config is never silently put in place of the
// caller's.
func (p *Producer) options(q QueueConfig, opts []EnqueueOption) (enqueueOptions, QueueConfig, error) {
	var o enqueueOptions
	if len(opts) > 0 {
		o = applyOptions(opts)
	}
	p.mu.RLock()
	declared, ok := p.queues[q.Name]
	p.mu.RUnlock()
	if !ok {
		return o, q.WithDefaults(), nil
	}
	if err := kindConflict(declared, q); err != nil {
		return o, q, fmt.Errorf("enqueue onto %q: %w", q.Name, err)
	}
	if err := producerMismatch(declared, q.WithDefaults()); err != nil {
		return o, q, err
	}
	if q.Kind != "" {
		declared.Kind = q.Kind
	}
	return o, declared, nil
}

// producerMismatch returns ErrQueueMismatch when q, given to an enqueue,
// differs from declared, the config this producer declared under its name,
// in a field the enqueue depends on: the priority range, the attempts the
// job carries, and where its waits are held. Each differing field is named
// with both values. Fields only consumers read (prefetch, concurrency,
// retry delays, timeout, schedule) may differ.
func producerMismatch(declared, q QueueConfig) error {
	var diffs []string
	diff := func(field string, d, g any) {
		if d != g {
			diffs = append(diffs, fmt.Sprintf("%s %v here, %v declared", field, g, d))
		}
	}
	diff("MaxPriority", declared.MaxPriority, q.MaxPriority)
	diff("MaxAttempts", declared.MaxAttempts, q.MaxAttempts)
	diff("QueueType", strconv.Quote(string(declared.QueueType)), strconv.Quote(string(q.QueueType)))
	diff("Delay", strconv.Quote(string(declared.Delay)), strconv.Quote(string(q.Delay)))
	diff("DelayExchange", strconv.Quote(declared.DelayExchange), strconv.Quote(q.DelayExchange))
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: enqueue onto %q with a config that differs from the one this producer declared: %s; enqueue with the declared config (a generated XQueue variable)",
		ErrQueueMismatch, q.Name, strings.Join(diffs, "; "))
}

// targetWaits tells the backend, when it needs to know (WaitTargeter),
// the config of q before the first delayed enqueue onto q, which this
// producer did not declare: the backend holds the wait as q's config says,
// without q declared here.
func (p *Producer) targetWaits(ctx context.Context, q QueueConfig, o enqueueOptions) error {
	if o.delay <= 0 {
		return nil
	}
	wt, ok := p.backend.(WaitTargeter)
	if !ok {
		return nil
	}
	p.mu.RLock()
	_, declared := p.queues[q.Name]
	_, targeted := p.targeted[q.Name]
	p.mu.RUnlock()
	if declared || targeted {
		return nil
	}
	if err := wt.TargetWaits(ctx, q); err != nil {
		return err
	}
	p.mu.Lock()
	if p.targeted == nil {
		p.targeted = make(map[string]struct{})
	}
	p.targeted[q.Name] = struct{}{}
	p.mu.Unlock()
	return nil
}

// applyOptions returns the options opts set. It is apart from options so
// that the value opts write to, which escapes, is allocated only when
// there are options.
func applyOptions(opts []EnqueueOption) enqueueOptions {
	var o enqueueOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// envelope checks the options against q and returns the envelope of one job.
func (p *Producer) envelope(q QueueConfig, o enqueueOptions, payload []byte) (*Envelope, error) {
	if err := p.check(q, o); err != nil {
		return nil, err
	}
	id := o.id
	if !o.hasID {
		var err error
		if id, err = newID(); err != nil {
			return nil, err
		}
	}
	env := new(Envelope)
	p.fill(env, q, o, id, payload, p.now().UTC())
	return env, nil
}

// check refuses options that q cannot take.
func (p *Producer) check(q QueueConfig, o enqueueOptions) error {
	if top := int(q.topPriority()); o.hasPriority && (o.priority < 0 || o.priority > top) {
		if q.MaxPriority == NoPriority {
			return fmt.Errorf("%w: queue %q: priority %d, want 0: the queue declares no priority (%s)", ErrInvalidOption, q.Name, o.priority, describePriority(q.MaxPriority))
		}
		return fmt.Errorf("%w: queue %q: priority %d, want 0..%d (the queue's max_priority)", ErrInvalidOption, q.Name, o.priority, top)
	}
	if o.delay < 0 {
		return fmt.Errorf("%w: queue %q: delay %v, want 0 or more", ErrInvalidOption, q.Name, o.delay)
	}
	if o.hasID && o.id == "" {
		return fmt.Errorf("%w: queue %q: WithID(\"\"): a job ID must not be empty; leave WithID out for a generated one", ErrInvalidOption, q.Name)
	}
	if o.hasID {
		if err := CheckJobID(o.id); err != nil {
			return fmt.Errorf("queue %q: WithID: %w", q.Name, err)
		}
	}
	for name, v := range o.headers {
		if strings.HasPrefix(name, ReservedHeaderPrefix) {
			return reservedHeaderError(q, o.headers)
		}
		if !utf8.ValidString(name) || !utf8.ValidString(v) {
			return fmt.Errorf("%w: queue %q: header %q: names and values must be valid UTF-8 (the wire format carries no other strings)", ErrInvalidOption, q.Name, strings.ToValidUTF8(name, "\uFFFD"))
		}
	}
	return nil
}

// reservedHeaderError names the first, in sorted order, of headers whose
// name is reserved.
func reservedHeaderError(q QueueConfig, headers map[string]string) error {
	var reserved []string
	for name := range headers {
		if strings.HasPrefix(name, ReservedHeaderPrefix) {
			reserved = append(reserved, name)
		}
	}
	slices.Sort(reserved)
	return fmt.Errorf("%w: queue %q: header %q is reserved: queuey sets the headers whose names start with %q itself; rename it", ErrInvalidOption, q.Name, reserved[0], ReservedHeaderPrefix)
}

// fill sets env to the first run of a job with ID id on q, enqueued at now.
func (p *Producer) fill(env *Envelope, q QueueConfig, o enqueueOptions, id string, payload []byte, now time.Time) {
	*env = Envelope{
		ID:          id,
		Queue:       q.Name,
		Kind:        q.Kind,
		Payload:     payload,
		Attempt:     1,
		MaxAttempts: q.MaxAttempts,
		Priority:    uint8(o.priority),
		EnqueuedAt:  now,
		Headers:     maps.Clone(o.headers),
	}
	if o.tick != "" {
		if env.Headers == nil {
			env.Headers = make(map[string]string, 1)
		}
		env.Headers[HeaderTick] = o.tick
	}
}

// publishSized publishes envs, whose headers take headers bytes each,
// through the middleware, and returns one error per envelope: a job too
// large for any backend (checkSize) is refused alone, and the others go.
func (p *Producer) publishSized(ctx context.Context, envs []*Envelope, headers int, delay time.Duration) []error {
	refused := 0
	for _, env := range envs {
		if len(env.Payload)+headers > MaxJobSize {
			refused++
		}
	}
	if refused == 0 {
		return p.publisher()(ctx, envs, delay)
	}
	errs := make([]error, len(envs))
	send := make([]*Envelope, 0, len(envs)-refused)
	idx := make([]int, 0, len(envs)-refused)
	for i, env := range envs {
		if errs[i] = checkSize(env, headers); errs[i] == nil {
			send, idx = append(send, env), append(idx, i)
		}
	}
	if len(send) > 0 {
		for j, err := range p.publisher()(ctx, send, delay) {
			errs[idx[j]] = err
		}
	}
	return errs
}

// checkSize refuses env, with headers bytes of headers, when it is larger
// than MaxJobSize.
func checkSize(env *Envelope, headers int) error {
	if n := len(env.Payload) + headers; n > MaxJobSize {
		return fmt.Errorf("%w: job %q: payload and headers are %d bytes, over %d (runtime.MaxJobSize, the most any RabbitMQ broker takes in one message): keep large data elsewhere and enqueue a reference to it",
			ErrTooLarge, env.ID, n, MaxJobSize)
	}
	return nil
}

// headersSize is the bytes of h's names and values.
func headersSize(h map[string]string) int {
	n := 0
	for k, v := range h {
		n += len(k) + len(v)
	}
	return n
}
