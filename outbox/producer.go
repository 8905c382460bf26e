package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/queuey/queuey/runtime"
)

// Producer returns a producer whose enqueues insert their jobs into the
// outbox in tx, to be published by a Relay once tx commits; nothing is
// published when tx rolls back. Generated EnqueueX and EnqueueManyX
// functions take it unchanged, and every enqueue option works: the
// job's ID is assigned at insert (or is WithID's: a label, which two rows
// may share), and WithDelay's delay
// counts from the insert, on the database's clock, however long the
// transaction or the relay takes. An enqueue fails when the insert does,
// and then, as with any failed statement, PostgreSQL aborts tx.
//
// An enqueue that the producer's checks refuse (an ID over
// runtime.MaxJobIDLen bytes, say) fails before the insert and leaves tx
// as it was. The producer declares no queue and does not check that the
// job's queue exists: the relay does, when it publishes, tries a job whose
// queue does not exist again for a while (Relay.MissingQueueGrace), then
// moves it to queuey_outbox_dead. Like tx, the producer is for one
// goroutine at a time; it lives as long as tx. Middleware added with Use
// runs at insert, so headers it sets (trace context) travel with the
// row.
func Producer(tx Tx) *runtime.Producer {
	return runtime.NewProducerUndeclared(&inserter{tx: tx})
}

// inserter is the runtime.Backend of a Producer: its publishes insert rows
// in a transaction. It remembers the config of each queue a delayed job
// goes to (runtime.WaitTargeter), which the row carries for the relay.
type inserter struct {
	tx Tx

	mu    sync.Mutex
	waits map[string]runtime.QueueConfig
}

var (
	_ runtime.Backend        = (*inserter)(nil)
	_ runtime.BatchPublisher = (*inserter)(nil)
	_ runtime.WaitTargeter   = (*inserter)(nil)
)

// discard is the inserter's logger: it logs nothing.
var discard = slog.New(slog.DiscardHandler)

// Declare refuses: an outbox producer declares no queue.
func (b *inserter) Declare(ctx context.Context, q runtime.QueueConfig) error {
	return fmt.Errorf("%w: outbox: a producer bound to a transaction declares no queue (%q): declare it where the worker or relay runs", runtime.ErrInvalidOption, q.Name)
}

// Consume refuses: the outbox is only written here.
func (b *inserter) Consume(ctx context.Context, q runtime.QueueConfig) (runtime.Subscription, error) {
	return nil, fmt.Errorf("%w: outbox: %q: jobs are consumed from the broker the relay publishes to", runtime.ErrCannotConsume, q.Name)
}

// Close does nothing: the transaction is the application's.
func (b *inserter) Close() error { return nil }

// Logger returns a logger that discards.
func (b *inserter) Logger() *slog.Logger { return discard }

// TargetWaits remembers q, whose type and delay mode the rows of its
// delayed jobs carry.
func (b *inserter) TargetWaits(ctx context.Context, q runtime.QueueConfig) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waits == nil {
		b.waits = make(map[string]runtime.QueueConfig)
	}
	b.waits[q.Name] = q
	return nil
}

// Publish inserts env, to run after delay.
func (b *inserter) Publish(ctx context.Context, env *runtime.Envelope, delay time.Duration) error {
	if delay > runtime.MaxDeferral {
		return fmt.Errorf("outbox: job %q onto %q: delay %v: %w", env.ID, env.Queue, delay, runtime.ErrDelayTooLong)
	}
	return b.insert(ctx, []*runtime.Envelope{env}, delay)
}

// PublishBatch inserts envs, with as few statements as the parameter limit
// allows; they are stored all or none.
func (b *inserter) PublishBatch(ctx context.Context, envs []*runtime.Envelope) []error {
	err := b.insert(ctx, envs, 0)
	errs := make([]error, len(envs))
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// insertColumns are the columns one row takes parameters for; due_at is
// computed from the delay_us parameter.
const insertColumns = 12

// rowsPerInsert bounds a statement's rows below PostgreSQL's 65535
// parameters.
const rowsPerInsert = 1000

// insert inserts envs, all with delay.
func (b *inserter) insert(ctx context.Context, envs []*runtime.Envelope, delay time.Duration) error {
	for start := 0; start < len(envs); start += rowsPerInsert {
		chunk := envs[start:min(start+rowsPerInsert, len(envs))]
		sql, args, err := b.statement(chunk, delay)
		if err != nil {
			return err
		}
		if err := b.tx.Exec(ctx, sql, args...); err != nil {
			return fmt.Errorf("outbox: insert into queuey_outbox: %w", err)
		}
	}
	return nil
}

// statement returns the INSERT of envs and its arguments.
func (b *inserter) statement(envs []*runtime.Envelope, delay time.Duration) (string, []any, error) {
	var sql strings.Builder
	sql.WriteString(`INSERT INTO queuey_outbox (id, queue, kind, priority, max_attempts, headers, payload, enqueued_at, due_at, queue_type, delay_mode, delay_exchange) VALUES `)
	args := make([]any, 0, len(envs)*insertColumns)
	for i, env := range envs {
		if env == nil {
			return "", nil, errors.New("outbox: insert: nil envelope")
		}
		// The schema's rules, checked before the insert, so that a job
		// they refuse fails its enqueue alone instead of aborting tx:
		// middleware may have changed what the producer checked.
		if err := runtime.CheckJobID(env.ID); err != nil {
			return "", nil, fmt.Errorf("outbox: job onto %q: %w", env.Queue, err)
		}
		if env.MaxAttempts < 1 || env.MaxAttempts > runtime.MaxAttemptsLimit {
			return "", nil, fmt.Errorf("%w: outbox: job %q onto %q: max attempts %d, want 1..%d", runtime.ErrInvalidOption, env.ID, env.Queue, env.MaxAttempts, runtime.MaxAttemptsLimit)
		}
		if i > 0 {
			sql.WriteString(", ")
		}
		n := len(args)
		p := func(k int) string { return "$" + strconv.Itoa(n+k) }
		// due_at: the database's clock at insert plus the delay.
		fmt.Fprintf(&sql, "(%s, %s, %s, %s, %s, %s::jsonb, %s, %s, clock_timestamp() + %s::bigint * interval '1 microsecond', %s, %s, %s)",
			p(1), p(2), p(3), p(4), p(5), p(6), p(7), p(8), p(9), p(10), p(11), p(12))
		var headers, due, queueType, delayMode, delayExchange any
		if len(env.Headers) > 0 {
			h, err := json.Marshal(env.Headers)
			if err != nil {
				return "", nil, fmt.Errorf("outbox: job %q: headers: %w", env.ID, err)
			}
			headers = string(h)
		}
		if delay > 0 {
			due = delay.Microseconds()
			if delay%time.Microsecond != 0 {
				due = delay.Microseconds() + 1 // never early
			}
			b.mu.Lock()
			q, ok := b.waits[env.Queue]
			b.mu.Unlock()
			if ok {
				queueType, delayMode = string(q.QueueType), string(q.Delay)
				if q.DelayExchange != "" {
					delayExchange = q.DelayExchange
				}
			}
		}
		payload := env.Payload
		if payload == nil {
			payload = []byte{}
		}
		args = append(args, env.ID, env.Queue, env.Kind, int64(env.Priority), int64(env.MaxAttempts), headers, payload,
			env.EnqueuedAt, due, queueType, delayMode, delayExchange)
	}
	return sql.String(), args, nil
}
