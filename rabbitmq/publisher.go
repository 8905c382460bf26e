package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/codec"
)

// clip shortens a name for an error message.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}

// seqHeader carries a publish's sequence number on its channel when its
// message id cannot pair a basic.return with it: when another publish with
// the same id is in flight on the channel. Each header costs the broker time
// on every publish, so the common case goes without.
const seqHeader = "x-queuey-publish-seq"

// publisher publishes over a pool of confirm-mode channels, each with many
// publishes in flight. Every publish waits for its confirm, and every one but
// a plugin wait is mandatory.
type publisher struct {
	conn  *connection
	log   *slog.Logger
	slots []*slot
	next  atomic.Uint32
	// waits carry plugin waits, apart from every other publish: a wait to
	// a delay exchange that is gone makes the broker close its channel
	// (404), failing whatever else is in flight on it.
	waits    []*slot
	nextWait atomic.Uint32
	// serial carries publishes one at a time, so that a publish without a
	// correlation header (PublishRaw, in tests) can still be paired with
	// its return.
	serial *slot
}

func newPublisher(conn *connection, channels int, log *slog.Logger) *publisher {
	p := &publisher{conn: conn, log: log, serial: newSlot()}
	for range channels {
		p.slots = append(p.slots, newSlot())
	}
	for range waitChannels {
		p.waits = append(p.waits, newSlot())
	}
	return p
}

// slot holds one confirm channel and replaces it once it has died.
type slot struct {
	cur atomic.Pointer[pubChannel] // the channel; read on every publish
	// opening is held while a channel is opened: a channel of one, so
	// that a publish waiting for it stops when its context ends.
	opening chan struct{}
}

func newSlot() *slot { return &slot{opening: make(chan struct{}, 1)} }

func (s *slot) get(ctx context.Context, p *publisher) (*pubChannel, error) {
	if pc := s.cur.Load(); pc != nil && !pc.dead.Load() {
		return pc, nil
	}
	select {
	case s.opening <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("rabbitmq: waiting for a publishing channel: %w", ctx.Err())
	}
	defer func() { <-s.opening }()
	if pc := s.cur.Load(); pc != nil && !pc.dead.Load() {
		return pc, nil
	}
	ch, err := p.conn.channel(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := callCtx(ctx, func() (struct{}, error) { return struct{}{}, ch.Confirm(false) }, nil); err != nil {
		go ch.Close() // may wait on a broker that stopped answering
		return nil, p.conn.blockedError(ctx, brokerError("rabbitmq: put channel in confirm mode", err))
	}
	pc := newPubChannel(ch, p.conn, p.log)
	s.cur.Store(pc)
	return pc, nil
}

// publish publishes msg to exchange with routing key key, mandatory, and
// returns once the broker confirmed it: nil for an ack, an error wrapping
// ErrUnroutable for a return, ErrNacked for a nack and ErrNotConfirmed when
// the channel died first. msg.Headers must be a map the caller owns.
func (p *publisher) publish(ctx context.Context, exchange, key string, msg amqp.Publishing) error {
	return p.send(ctx, exchange, key, true, msg)
}

// waitChannels is how many confirm-mode channels carry plugin waits.
const waitChannels = 2

func (p *publisher) send(ctx context.Context, exchange, key string, mandatory bool, msg amqp.Publishing) error {
	s := p.slots[int(p.next.Add(1))%len(p.slots)]
	pc, err := s.get(ctx, p)
	if err != nil {
		return err
	}
	return pc.publish(ctx, exchange, key, msg, mandatory, false)
}

// publishWait publishes a wait through the delayed-message-exchange plugin,
// confirmed but not mandatory (the plugin routes nothing at publish time,
// so it returns every mandatory publish), on the channels of plugin waits.
// batchWindow is how many publishes of one batch may await their confirms
// at once.
const batchWindow = 256

// outMsg is one publish of a batch.
type outMsg struct {
	key string
	msg amqp.Publishing
}

// publishBatch publishes msgs to the default exchange, mandatory, all on
// one channel without waiting in between, then waits for every confirm. It
// returns one error per message.
func (p *publisher) publishBatch(ctx context.Context, msgs []outMsg) []error {
	errs := make([]error, len(msgs))
	s := p.slots[int(p.next.Add(1))%len(p.slots)]
	pc, err := s.get(ctx, p)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	waiters := make([]*waiter, len(msgs))
	await := func(i int) {
		if waiters[i] != nil {
			errs[i] = pc.await(ctx, waiters[i], msgs[i].key)
		}
	}
	for i, m := range msgs {
		if i >= batchWindow {
			await(i - batchWindow)
		}
		waiters[i], errs[i] = pc.start(ctx, "", m.key, m.msg, true, false)
	}
	for i := max(0, len(msgs)-batchWindow); i < len(msgs); i++ {
		await(i)
	}
	return errs
}

func (p *publisher) publishWait(ctx context.Context, exchange, key string, msg amqp.Publishing) error {
	s := p.waits[int(p.nextWait.Add(1))%len(p.waits)]
	pc, err := s.get(ctx, p)
	if err != nil {
		return err
	}
	return pc.publish(ctx, exchange, key, msg, false, false)
}

// close waits for every channel's confirm loop to end; the connection must
// be closed first.
func (p *publisher) wait() {
	for _, s := range append(append([]*slot{p.serial}, p.slots...), p.waits...) {
		if pc := s.cur.Load(); pc != nil {
			<-pc.done
		}
	}
}

// pubChannel is one confirm-mode channel. Publishes take pubMu only around
// basic.publish; confirms and returns are matched to waiters by one loop
// goroutine, which never blocks, so amqp091-go never drops a notification.
type pubChannel struct {
	ch   *amqp.Channel
	conn *connection
	log  *slog.Logger
	// pubMu is held around basic.publish. A channel of one, so that a
	// publish waiting for it stops when its context ends: the holder may
	// be stuck in a socket write to a broker that stopped reading.
	pubMu chan struct{}

	mu      sync.Mutex
	pending map[uint64]*waiter
	ids     map[string]uint64 // message id -> seq of publishes in flight paired by id
	broken  error             // why the channel takes no more publishes
	generic bool              // broken says only that the channel was closed, not why
	dead    atomic.Bool       // broken != nil, readable without mu
	done    chan struct{}
}

type waiter struct {
	res chan error // buffered: the loop never blocks on it
	ret *amqp.Return
	id  string // message id the waiter is paired by, if any
}

func newPubChannel(ch *amqp.Channel, conn *connection, log *slog.Logger) *pubChannel {
	pc := &pubChannel{ch: ch, conn: conn, log: log, pubMu: make(chan struct{}, 1), pending: map[uint64]*waiter{}, ids: map[string]uint64{}, done: make(chan struct{})}
	confirms := ch.NotifyPublish(make(chan amqp.Confirmation, 1024))
	// Unbuffered: the reader hands a return over before it can read the
	// basic.ack that follows it, and the loop handles the return before it
	// receives again, so a return is always seen before its confirm.
	returns := ch.NotifyReturn(make(chan amqp.Return))
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	go pc.loop(confirms, returns, closes)
	return pc
}

// breakWith marks the channel as taking no more publishes, for reason err.
// The first reason stays, unless it only says that the channel was closed
// (generic) and err says why. pc.mu must be held.
func (pc *pubChannel) breakWith(err error, generic bool) {
	if pc.broken == nil || (pc.generic && !generic) {
		pc.broken = err
		pc.generic = generic
		pc.dead.Store(true)
	}
}

// publish publishes msg and waits for its confirm. A mandatory publish that
// is not serial is paired with its basic.return, if one comes, by message id
// or by seqHeader; one that is not mandatory gets no return and needs
// neither.
func (pc *pubChannel) publish(ctx context.Context, exchange, key string, msg amqp.Publishing, mandatory, serial bool) error {
	w, err := pc.start(ctx, exchange, key, msg, mandatory, serial)
	if err != nil {
		return err
	}
	if serial {
		defer pc.unlock()
	}
	return pc.await(ctx, w, key)
}

// start publishes msg and returns the waiter its confirm will reach. With
// serial, pubMu stays locked for the caller to unlock once confirmed.
func (pc *pubChannel) start(ctx context.Context, exchange, key string, msg amqp.Publishing, mandatory, serial bool) (*waiter, error) {
	// A field too long for the wire fails in the client library after the
	// method frame went out, and the broker closes the whole connection:
	// refuse it before it touches the channel.
	if err := codec.CheckPublishing(exchange, key, &msg); err != nil {
		return nil, fmt.Errorf("publish to %q: %w", clip(key), err)
	}
	// So would a header the client library cannot encode, before it
	// touches the channel; checked here, it does not count as a failure
	// of the channel.
	if err := msg.Headers.Validate(); err != nil {
		return nil, fmt.Errorf("publish to %q: %w", clip(key), err)
	}
	w := &waiter{res: make(chan error, 1)}
	if err := pc.lock(ctx, key); err != nil {
		return nil, err
	}
	pc.mu.Lock()
	if pc.broken != nil {
		pc.mu.Unlock()
		pc.unlock()
		return nil, fmt.Errorf("publish to %q: %w", key, pc.reason(ctx))
	}
	seq := pc.ch.GetNextPublishSeqNo()
	pc.pending[seq] = w
	if mandatory && !serial {
		if _, dup := pc.ids[msg.MessageId]; msg.MessageId != "" && !dup {
			w.id = msg.MessageId
			pc.ids[w.id] = seq
			// A header left from an earlier publish of the same map, or
			// carried by a message moved as it was, would pair a return
			// with another publish.
			delete(msg.Headers, seqHeader)
		} else {
			msg.Headers[seqHeader] = int64(seq)
		}
	}
	pc.mu.Unlock()
	err := pc.ch.PublishWithContext(ctx, exchange, key, mandatory, false, msg)
	if err != nil {
		pc.mu.Lock()
		pc.forget(seq, w)
		closed := errors.Is(err, amqp.ErrClosed)
		failed := !closed && !errors.Is(err, ctx.Err())
		if closed || failed {
			pc.breakWith(fmt.Errorf("%w: channel failed: %w", ErrNotConfirmed, err), closed)
		}
		pc.mu.Unlock()
		pc.unlock()
		if closed {
			return nil, fmt.Errorf("publish to %q: %w", key, pc.reason(ctx))
		}
		if failed {
			// A client-side failure leaves the channel in a state nobody
			// knows, and no publish takes it any more: close it, which
			// fails what is still in flight on it and ends its loop.
			_ = pc.ch.Close()
		}
		return nil, brokerError(fmt.Sprintf("publish to %q", key), err)
	}
	if !serial {
		pc.unlock()
	}
	return w, nil
}

// lock takes pubMu, first waiting out a block of the connection by a
// resource alarm: while blocked, the broker reads nothing, and a publish
// would only add to what it has not read. Either wait ends with ctx, and
// then the publish fails with ErrBlocked or ctx's error.
func (pc *pubChannel) lock(ctx context.Context, key string) error {
	if err := pc.conn.waitUnblocked(ctx, fmt.Sprintf("publish to %q", key)); err != nil {
		return err
	}
	select {
	case pc.pubMu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("publish to %q: waiting for the channel: %w", key, ctx.Err())
	}
}

func (pc *pubChannel) unlock() { <-pc.pubMu }

// await waits for w's confirm, and says when the connection is blocked by a
// resource alarm, which is why a confirm does not come.
func (pc *pubChannel) await(ctx context.Context, w *waiter, key string) error {
	return pc.conn.blockedError(ctx, w.await(ctx, key))
}

// await waits for w's confirm: nil for an ack, the return or nack
// otherwise, and ErrNotConfirmed when ctx ends first.
func (w *waiter) await(ctx context.Context, key string) error {
	select {
	case err := <-w.res:
		if err != nil {
			return fmt.Errorf("publish to %q: %w", key, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("publish to %q: %w before the broker confirmed it: %w", key, ErrNotConfirmed, ctx.Err())
	}
}

// reason returns why the channel takes no more publishes. When all that is
// known is that it was closed, by the broker or with its connection, it
// waits (bounded by ctx) for the loop to end: by then the close
// notification has said why.
func (pc *pubChannel) reason(ctx context.Context) error {
	pc.mu.Lock()
	err, generic := pc.broken, pc.generic
	pc.mu.Unlock()
	if !generic {
		return err
	}
	select {
	case <-pc.done:
	case <-ctx.Done():
		return err
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.broken
}

func (pc *pubChannel) loop(confirms <-chan amqp.Confirmation, returns <-chan amqp.Return, closes <-chan *amqp.Error) {
	defer close(pc.done)
	cause := errors.New("channel closed")
	for confirms != nil || returns != nil {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			pc.onReturn(r)
		case c, ok := <-confirms:
			if !ok {
				confirms = nil
				continue
			}
			pc.onConfirm(c)
		case e, ok := <-closes:
			closes = nil
			generic := true
			if ok && e != nil {
				cause, generic = brokerError("channel closed", e), false
			}
			pc.mu.Lock()
			pc.breakWith(fmt.Errorf("%w: %w", ErrNotConfirmed, cause), generic)
			pc.mu.Unlock()
		}
	}
	// Both notification channels are closed: no confirm can come any more.
	// The close notification, if any, was sent before they were closed.
	generic := true
	if closes != nil {
		select {
		case e, ok := <-closes:
			if ok && e != nil {
				cause, generic = brokerError("channel closed", e), false
			}
		default:
		}
	}
	pc.mu.Lock()
	pc.breakWith(fmt.Errorf("%w: %w", ErrNotConfirmed, cause), generic)
	for seq, w := range pc.pending {
		w.res <- pc.broken
		pc.forget(seq, w)
	}
	pc.mu.Unlock()
}

func (pc *pubChannel) onReturn(r amqp.Return) {
	if pc.pair(&r) {
		return
	}
	pc.log.Error("queuey: basic.return matches no publish in flight", "queue", r.RoutingKey, "reply", r.ReplyText)
}

// pair hands return r to the publish in flight it belongs to, and reports
// whether there was one.
func (pc *pubChannel) pair(r *amqp.Return) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if seq, ok := r.Headers[seqHeader].(int64); ok {
		if w := pc.pending[uint64(seq)]; w != nil {
			w.ret = r
			return true
		}
	} else if seq, ok := pc.ids[r.MessageId]; ok && r.MessageId != "" {
		pc.pending[seq].ret = r
		return true
	} else if len(pc.pending) == 1 {
		for _, w := range pc.pending {
			w.ret = r
		}
		return true
	}
	return false
}

func (pc *pubChannel) onConfirm(c amqp.Confirmation) {
	pc.mu.Lock()
	w := pc.pending[c.DeliveryTag]
	if w != nil {
		pc.forget(c.DeliveryTag, w)
	}
	pc.mu.Unlock()
	switch {
	case w == nil:
	case w.ret != nil:
		w.res <- fmt.Errorf("%w: queue %q (exchange %q): %d %s", ErrUnroutable, w.ret.RoutingKey, w.ret.Exchange, w.ret.ReplyCode, w.ret.ReplyText)
	case !c.Ack:
		w.res <- ErrNacked
	default:
		w.res <- nil
	}
}

// forget removes the publish seq, waiting on w, from the books. pc.mu must
// be held.
func (pc *pubChannel) forget(seq uint64, w *waiter) {
	delete(pc.pending, seq)
	if w.id != "" && pc.ids[w.id] == seq {
		delete(pc.ids, w.id)
	}
}
