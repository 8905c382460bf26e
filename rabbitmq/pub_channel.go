package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"sync"
	"sync/atomic"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

// pubChannel is one confirm-mode channel. Publishes take pubMu only around
// basic.publish. Each waits for its own confirm through amqp091-go's
// deferred confirmation; returns are matched to inflights by one loop
// goroutine, which never blocks for long, so amqp091-go never drops one.
//
// No confirm listener (NotifyPublish) is registered: amqp091-go hands a
// listener every confirm on a channel send bounded by a timer made for it,
// which cost the client about a microsecond per publish, on the goroutine
// that reads the connection.
type pubChannel struct {
	ch   *amqp.Channel
	conn *connection
	sock *corkConn // the socket of ch's connection, or nil
	log  *slog.Logger
	// pubMu is held around basic.publish. A channel of one, so that a
	// publish waiting for it stops when its context ends: the holder may
	// be stuck in a socket write to a broker that stopped reading.
	pubMu chan struct{}

	// limits are what the broker takes in one publish on ch's connection.
	limits codec.Limits

	mu      sync.Mutex
	pending map[uint64]*inflight
	ids     map[string]uint64 // message id -> seq of publishes in flight paired by id
	broken  error             // why the channel takes no more publishes
	generic bool              // broken says only that the channel was closed, not why
	dead    atomic.Bool       // broken != nil, readable without mu
	done    chan struct{}
	// solo says the channel carries one publish at a time (PublishRaw, in
	// tests): a return pairs with the one publish in flight, so a publish
	// needs no correlation header.
	solo bool
}

// inflight is one publish in flight: its confirm, and the return that came
// before it, if any.
type inflight struct {
	dc  *amqp.DeferredConfirmation
	seq uint64
	ret *amqp.Return // set by the loop, under pc.mu
	id  string       // message id the publish is paired by, if any
}

func newPubChannel(ch *amqp.Channel, conn *connection, log *slog.Logger) *pubChannel {
	pc := &pubChannel{ch: ch, conn: conn, log: log, pubMu: make(chan struct{}, 1), pending: map[uint64]*inflight{}, ids: map[string]uint64{}, done: make(chan struct{})}
	// Each return comes twice, on two unbuffered channels in turn, and the
	// loop receives the second only once it has paired the first with its
	// publish. The reader goroutine, blocked on that second hand-over, can
	// read the basic.ack that follows a return, and so settle the
	// publish's deferred confirmation, only after the pairing: a publish
	// that sees its confirm sees its return too.
	returns := ch.NotifyReturn(make(chan amqp.Return))
	paired := ch.NotifyReturn(make(chan amqp.Return))
	closes := ch.NotifyClose(make(chan *amqp.Error, 1))
	go pc.loop(returns, paired, closes)
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

// publish publishes msg and waits for its confirm. A mandatory publish is
// paired with its basic.return, if one comes, by message id or by
// seqHeader; one that is not mandatory gets no return and needs neither.
func (pc *pubChannel) publish(ctx context.Context, exchange, key string, msg amqp.Publishing, mandatory bool) error {
	if pc.sock != nil {
		pc.sock.singles.Add(1)
		defer pc.sock.singles.Add(-1)
	}
	w, err := pc.start(ctx, exchange, key, msg, mandatory)
	if err != nil {
		return err
	}
	return pc.await(ctx, w, key)
}

// start publishes msg and returns its inflight, which awaits its confirm.
func (pc *pubChannel) start(ctx context.Context, exchange, key string, msg amqp.Publishing, mandatory bool) (*inflight, error) {
	w := &inflight{}
	if err := pc.startIn(ctx, w, exchange, key, msg, mandatory, false, nil); err != nil {
		return nil, err
	}
	return w, nil
}

// publishRenewing publishes msg to hold queue q through the default
// exchange, mandatory, between two declares of q on the same channel, and
// waits for every answer: when declareFirst says so once the channel is
// held, a declare of q (creating it if it is gone), then the publish, then
// a passive declare. The broker
// handles a channel's frames in order, so the passive declare, which
// renews q's expiry (x-expires), comes right after the message entered q,
// however long the publish took to reach the broker. A q that was gone
// when the publish came returns it (ErrUnroutable); a q that expired
// between the publish and the passive declare fails that declare
// (errHoldGone), which closes the channel. The channel is held until the
// declares are answered: the client library would put another publish's
// frames around a declare's.
func (pc *pubChannel) publishRenewing(ctx context.Context, q topology.Queue, msg amqp.Publishing, declareFirst func() bool) error {
	if pc.sock != nil {
		pc.sock.singles.Add(1)
		defer pc.sock.singles.Add(-1)
	}
	declare := func(passive bool) error {
		_, err := callCtx(ctx, func() (amqp.Queue, error) {
			if passive {
				return pc.ch.QueueDeclarePassive(q.Name, true, false, false, false, nil)
			}
			return pc.ch.QueueDeclare(q.Name, true, false, false, false, q.Args)
		}, nil)
		return err
	}
	before := func() error {
		if declareFirst() {
			return declare(false)
		}
		return nil
	}
	var derr error
	after := func() { derr = declare(true) }
	w := &inflight{}
	if err := pc.startIn(ctx, w, "", q.Name, msg, true, false, &renewal{before: before, after: after}); err != nil {
		return err
	}
	perr := pc.await(ctx, w, q.Name)
	switch {
	case isCode(derr, amqp.NotFound):
		return fmt.Errorf("publish to %q: %w", q.Name, errHoldGone)
	case errors.Is(perr, ErrUnroutable):
		return perr
	case derr != nil && perr == nil:
		return brokerError(fmt.Sprintf("renew hold queue %q", q.Name), derr)
	}
	return perr
}

// renewal is what runs on the channel around a publish to a hold queue
// (publishRenewing), the channel held and the connection uncorked: before
// the publish, and after it.
type renewal struct {
	before func() error
	after  func()
}

// errNotSent says that a publish was not sent: its channel had died
// before it.
var errNotSent = errors.New("not sent")

// errHoldGone says that a hold queue expired between a publish to it and
// the declare after it: the message may have gone with it.
var errHoldGone = errors.New("hold queue expired as the wait was published")

// errBlockedNow is startIn's answer, within a corked run, when the
// connection is blocked by a resource alarm: the caller uncorks and waits
// the block out before it goes on.
var errBlockedNow = errors.New("connection blocked")

// startIn is start, with w, which must be zero, as its inflight. With around,
// its calls run before and after the publish, the channel held and the
// connection uncorked (publishRenewing). In a corked
// run (corked), it does not wait for a block of the connection to end,
// which would hold the connection's other frames back with the cork: it
// returns errBlockedNow instead.
func (pc *pubChannel) startIn(ctx context.Context, w *inflight, exchange, key string, msg amqp.Publishing, mandatory, corked bool, around *renewal) error {
	if err := pc.admit(exchange, key, &msg, mandatory); err != nil {
		return err
	}
	if corked {
		if _, blocked := pc.conn.blocked(); blocked != nil {
			return errBlockedNow
		}
	}
	// In a corked run, the run's cork holds the publish already.
	sock := pc.sock
	if corked {
		sock = nil // a nil *corkConn corks nothing
	}
	err := pc.publishLocked(ctx, w, sock, exchange, key, msg, mandatory, !corked, around)
	var failed sendError
	switch {
	case errors.Is(err, errBroken):
		return fmt.Errorf("publish to %q: %w: %w", key, errNotSent, pc.reason(ctx))
	case errors.As(err, &failed):
		return pc.sendFailed(ctx, key, failed.err)
	case err != nil:
		return err
	case around != nil:
		return nil // uncorked while the channel was held
	}
	// The cork comes out after pubMu is released: a publisher waiting
	// for pubMu that takes it first corks too, and its publish goes out
	// in the same socket write as this one. When other single publishes
	// are in flight on the connection, it yields once before: their
	// publishers, woken by a batch of confirms, are likely about to
	// publish again, and cork in. A lone publisher does not yield, so
	// its publish is never held back for a scheduler round.
	if sock != nil && sock.singles.Load() > 1 {
		goruntime.Gosched()
	}
	sock.uncork()
	return nil
}

// admit refuses msg before it touches the channel: a field too long for
// the wire or a header the client library cannot encode fails in the
// library after the method frame went out, a content header over
// frame_max makes the broker close the whole connection, a body over its
// max message size the channel. Refused here, they do not count as a
// failure of the channel.
func (pc *pubChannel) admit(exchange, key string, msg *amqp.Publishing, mandatory bool) error {
	lim := pc.limits
	if mandatory && !pc.solo {
		lim.Reserve += seqHeaderRoom // for the pairing header enlist adds
	}
	if err := codec.CheckPublishing(exchange, key, msg, lim); err != nil {
		return fmt.Errorf("publish to %q: %w", errs.Clip(key), err)
	}
	return nil
}

// errBroken is enlist's answer on a channel that takes no more publishes;
// startIn says why once pubMu is released.
var errBroken = errors.New("channel broken")

// sendError is a basic.publish that failed in the client library, once
// the channel is marked broken when it is; startIn says why once pubMu
// is released (sendFailed).
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }

// publishLocked publishes msg with pubMu held, which it takes (waiting out a
// block of the connection with awaitBlock) and releases. It corks sock
// before the publish; a plain publish leaves it corked for the caller,
// one with around uncorks it before around.after.
func (pc *pubChannel) publishLocked(ctx context.Context, w *inflight, sock *corkConn, exchange, key string, msg amqp.Publishing, mandatory, awaitBlock bool, around *renewal) error {
	if err := pc.lock(ctx, key, awaitBlock); err != nil {
		return err
	}
	defer pc.unlock()
	if err := pc.enlist(w, &msg, mandatory); err != nil {
		return err
	}
	if around != nil {
		if err := around.before(); err != nil {
			pc.drop(w)
			return fmt.Errorf("publish to %q: declare it first: %w", key, err)
		}
	}
	sock.cork()
	if err := pc.send(ctx, w, exchange, key, msg, mandatory); err != nil {
		sock.uncork()
		return err
	}
	if around != nil {
		sock.uncork()
		around.after()
	}
	return nil
}

// enlist puts w on the books under the publish's sequence number and,
// for a mandatory publish, pairs it by message id or seqHeader. It fails
// with errBroken on a broken channel.
func (pc *pubChannel) enlist(w *inflight, msg *amqp.Publishing, mandatory bool) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.broken != nil {
		return errBroken
	}
	seq := pc.ch.GetNextPublishSeqNo()
	w.seq = seq
	pc.pending[seq] = w
	if !mandatory || pc.solo {
		return nil
	}
	if _, dup := pc.ids[msg.MessageId]; msg.MessageId != "" && !dup {
		w.id = msg.MessageId
		pc.ids[w.id] = seq
		// A header left from an earlier publish of the same map, or
		// carried by a message moved as it was, would pair a return
		// with another publish.
		delete(msg.Headers, seqHeader)
		return nil
	}
	if msg.Headers == nil {
		msg.Headers = amqp.Table{}
	}
	msg.Headers[seqHeader] = int64(seq)
	return nil
}

// drop takes w, which enlist put on the books, off them.
func (pc *pubChannel) drop(w *inflight) {
	pc.mu.Lock()
	pc.forget(w.seq, w)
	pc.mu.Unlock()
}

// send is basic.publish of msg, enlisted as w. A failure takes w off the
// books, marks the channel broken unless ctx ended it, and is a
// sendError.
func (pc *pubChannel) send(ctx context.Context, w *inflight, exchange, key string, msg amqp.Publishing, mandatory bool) error {
	dc, err := pc.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, mandatory, false, msg)
	if err == nil && dc == nil {
		// Only a channel out of confirm mode gives no confirmation, and
		// every pubChannel is put in confirm mode before it is used.
		err = errors.New("channel not in confirm mode")
	}
	w.dc = dc
	if err == nil {
		return nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.forget(w.seq, w)
	if closed := errors.Is(err, amqp.ErrClosed); closed || !errors.Is(err, ctx.Err()) {
		pc.breakWith(fmt.Errorf("%w: channel failed: %w", ErrNotConfirmed, err), closed)
	}
	return sendError{err}
}

// sendFailed is the error of a publish that send failed with err, pubMu
// released: why the channel closed, or the client library's failure,
// after which the channel is closed.
func (pc *pubChannel) sendFailed(ctx context.Context, key string, err error) error {
	if errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("publish to %q: %w", key, pc.reason(ctx))
	}
	if !errors.Is(err, ctx.Err()) {
		// A client-side failure leaves the channel in a state nobody
		// knows, and no publish takes it any more: close it, which
		// fails what is still in flight on it and ends its loop.
		_ = pc.ch.Close()
	}
	return brokerError(fmt.Sprintf("publish to %q", key), err)
}

// lock takes pubMu, first waiting out a block of the connection by a
// resource alarm: while blocked, the broker reads nothing, and a publish
// would only add to what it has not read. Either wait ends with ctx, and
// then the publish fails with ErrBlocked or ctx's error.
//
// Without awaitBlock it does not wait for a block: the caller looked just
// before, and a publish made as a block begins waits in the cork or the
// socket, as it would have in the broker.
func (pc *pubChannel) lock(ctx context.Context, key string, awaitBlock bool) error {
	if awaitBlock {
		if err := pc.conn.awaitUnblocked(ctx); err != nil {
			return fmt.Errorf("publish to %q: %w", key, err)
		}
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
func (pc *pubChannel) await(ctx context.Context, w *inflight, key string) error {
	return pc.conn.blockedError(ctx, pc.settle(ctx, w, key))
}

// settle waits for w's confirm and takes w off the books: nil for an ack,
// the return or nack otherwise, ErrNotConfirmed when the channel closed
// first (amqp091-go then settles every deferred confirmation as a nack)
// or when ctx ends first.
func (pc *pubChannel) settle(ctx context.Context, w *inflight, key string) error {
	select {
	case <-w.dc.Done():
	case <-ctx.Done():
		// The broker still owes this publish its confirm, and maybe a
		// return, which must not be paired with a later publish: it stays
		// on the books until the confirm comes or the channel closes
		// (amqp091-go settles every deferred confirmation either way).
		go func() {
			<-w.dc.Done()
			pc.mu.Lock()
			pc.forget(w.seq, w)
			pc.mu.Unlock()
		}()
		return fmt.Errorf("publish to %q: %w: stopped waiting for the broker's confirm: %w", key, ErrNotConfirmed, ctx.Err())
	}
	pc.mu.Lock()
	pc.forget(w.seq, w)
	ret := w.ret
	pc.mu.Unlock()
	switch {
	case ret != nil:
		return fmt.Errorf("publish to %q: %w: queue %q (exchange %q): %d %s", key, ErrUnroutable, ret.RoutingKey, ret.Exchange, ret.ReplyCode, ret.ReplyText)
	case w.dc.Acked():
		return nil
	case pc.ch.IsClosed():
		// amqp091-go marks the channel closed, and closes its return
		// notifications, which ends the loop, before it settles what is
		// in flight on it: the loop has recorded why, or is about to.
		return fmt.Errorf("publish to %q: %w", key, pc.reason(ctx))
	default:
		return fmt.Errorf("publish to %q: %w", key, ErrNacked)
	}
}

// reason returns why the channel takes no more publishes. When all that is
// known is that it was closed, by the broker or with its connection, or
// nothing is recorded yet (a publish that saw the close first), it waits
// (bounded by ctx) for the loop to end: by then the close notification has
// said why.
func (pc *pubChannel) reason(ctx context.Context) error {
	pc.mu.Lock()
	err, generic := pc.broken, pc.generic
	pc.mu.Unlock()
	if err != nil && !generic {
		return err
	}
	select {
	case <-pc.done:
	case <-ctx.Done():
		if err == nil {
			return fmt.Errorf("%w: channel closed", ErrNotConfirmed)
		}
		return err
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.broken
}
