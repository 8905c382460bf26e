package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"github.com/queuey/queuey/runtime"
	amqp "github.com/rabbitmq/amqp091-go"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// pauseWatch is one WatchPaused: its fields are guarded by the
// pauseNotices' mu.
type pauseWatch struct {
	queue   string
	out     chan bool
	last    bool
	started bool // the first state was sent
	removed bool // out is closed
}

// send sends paused when it is news: the first state, or a change. Only
// the latest state waits in out.
func (w *pauseWatch) send(paused bool) {
	if w.removed || (w.started && paused == w.last) {
		return
	}
	w.started, w.last = true, paused
	select { // replace a state not yet read
	case <-w.out:
	default:
	}
	w.out <- paused
}

// maxPauseChecks bounds the passive declares of paused markers in flight
// at once, when they are read one by one (see pauseNotices.read): each
// opens a channel of its own on the first consuming connection.
const maxPauseChecks = 64

// pauseNotices is a backend's one binding to the control exchange, and
// the one reader of the paused markers of every queue it watches. The
// binding, an exclusive queue on a channel of its own, is made when the
// first watch starts and kept until the backend closes; its notices, a
// lost binding, and a recheck every PauseRecheck or more mark queues to
// read, and one goroutine reads all the marked ones together, in one
// pass, and sends each watch its queue's state. A worker of thousands of
// queues so holds one channel, one exclusive queue and two goroutines for
// pausing, not one each, and starts with one pass over its markers.
type pauseNotices struct {
	p *pauses

	bind    sync.Mutex // held while the first binding is made
	mu      sync.Mutex
	bound   bool
	watches map[string]map[*pauseWatch]struct{}
	count   int        // watches in all
	next    *pausePass // gathering queues to read, not started yet
	kick    chan struct{}
}

// pausePass is one read of the markers of queues; done is closed once
// every state is sent, errs holding the queues that could not be read.
type pausePass struct {
	queues map[string]struct{}
	done   chan struct{}
	errs   map[string]error
}

// add makes w hear the notices of its queue, binding first if nothing is
// bound yet.
func (n *pauseNotices) add(ctx context.Context, w *pauseWatch) error {
	if err := n.start(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.watches == nil {
		n.watches = map[string]map[*pauseWatch]struct{}{}
	}
	ws := n.watches[w.queue]
	if ws == nil {
		ws = map[*pauseWatch]struct{}{}
		n.watches[w.queue] = ws
	}
	if _, ok := ws[w]; !ok {
		ws[w] = struct{}{}
		n.count++
	}
	return nil
}

// firstState waits for the next pass to read w's queue, which sends w
// its first state, and returns the error of that read, if any.
func (n *pauseNotices) firstState(ctx context.Context, w *pauseWatch) error {
	n.mu.Lock()
	p := n.markLocked(w.queue)
	n.mu.Unlock()
	select {
	case <-p.done:
		return p.errs[w.queue]
	case <-ctx.Done():
		return fmt.Errorf("paused state of queue %q: %w", w.queue, ctx.Err())
	case <-n.p.life.done():
		return n.p.life.refuse(fmt.Sprintf("paused state of queue %q", w.queue))
	}
}

// follow ends w with ctx, or when the backend closes: its channel is
// closed then.
func (n *pauseNotices) follow(ctx context.Context, w *pauseWatch) {
	stop := context.AfterFunc(ctx, func() { n.remove(w) })
	n.mu.Lock()
	removed := w.removed
	n.mu.Unlock()
	if removed {
		stop()
	}
}

// markLocked adds queue to the pass to come, starting one if none is
// gathering, and returns it. n.mu must be held.
func (n *pauseNotices) markLocked(queue string) *pausePass {
	if n.next == nil {
		n.next = &pausePass{queues: map[string]struct{}{}, done: make(chan struct{})}
		select {
		case n.kick <- struct{}{}:
		default:
		}
	}
	n.next.queues[queue] = struct{}{}
	return n.next
}

// size is how many watches there are.
func (n *pauseNotices) size() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.count
}

// remove ends w: it hears no more, and its channel is closed.
func (n *pauseNotices) remove(w *pauseWatch) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.removeLocked(w)
}

func (n *pauseNotices) removeLocked(w *pauseWatch) {
	if _, ok := n.watches[w.queue][w]; ok {
		delete(n.watches[w.queue], w)
		n.count--
	}
	if len(n.watches[w.queue]) == 0 {
		delete(n.watches, w.queue)
	}
	if !w.removed {
		w.removed = true
		close(w.out)
	}
}

// start binds, once, and starts the loops that read the notices and the
// markers.
func (n *pauseNotices) start(ctx context.Context) error {
	n.mu.Lock()
	bound := n.bound
	n.mu.Unlock()
	if bound {
		return nil
	}
	n.bind.Lock()
	defer n.bind.Unlock()
	n.mu.Lock()
	bound = n.bound
	n.mu.Unlock()
	if bound {
		return nil
	}
	ch, release, notices, err := n.open(ctx)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.bound = true
	n.kick = make(chan struct{}, 1)
	n.mu.Unlock()
	go n.loop(ch, release, notices)
	go n.reads()
	return nil
}

// open opens a channel with an exclusive queue bound to the control
// exchange and returns its notices.
func (n *pauseNotices) open(ctx context.Context) (*amqp.Channel, func(), <-chan amqp.Delivery, error) {
	pch, err := n.p.pool.channel(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	ch, release := pch.ch, pch.release
	notices, err := callCtx(ctx, func() (<-chan amqp.Delivery, error) {
		if err := ch.ExchangeDeclare(controlExchange, amqp.ExchangeFanout, true, false, false, false, nil); err != nil {
			return nil, err
		}
		q, err := ch.QueueDeclare("", false, true, true, false, nil)
		if err != nil {
			return nil, err
		}
		if err := ch.QueueBind(q.Name, "", controlExchange, false, nil); err != nil {
			return nil, err
		}
		return ch.Consume(q.Name, "", true, true, false, false, nil)
	}, nil)
	if err != nil {
		go func() { // may wait on a broker that stopped answering
			_ = ch.Close()
			release()
		}()
		return nil, nil, nil, brokerError(fmt.Sprintf("bind to %q", controlExchange), err)
	}
	return ch, release, notices, nil
}

// loop marks the queue each notice names to be read, and binds again
// after the channel is lost, marking every queue then: notices may have
// been lost meanwhile. It ends when the backend closes.
func (n *pauseNotices) loop(ch *amqp.Channel, release func(), notices <-chan amqp.Delivery) {
	for {
		select {
		case <-n.p.life.done():
			_ = ch.Close()
			release()
			return
		case d, ok := <-notices:
			if ok {
				// Notices of dead letters leaving (see deadIndex) do not
				// concern pausing.
				if verb, queue, _ := strings.Cut(string(d.Body), " "); verb != deadNotice {
					n.wake(queue)
				}
				continue
			}
		}
		_ = ch.Close()
		release()
		if ch, release, notices = n.rebind(); notices == nil {
			return
		}
		n.wake("")
	}
}

// rebind binds again, with backoff, until it can; it returns nil notices
// when the backend closes first.
func (n *pauseNotices) rebind() (*amqp.Channel, func(), <-chan amqp.Delivery) {
	ctx, cancel := n.p.life.until(context.Background())
	defer cancel()
	backoff := 50 * time.Millisecond
	for {
		ch, release, notices, err := n.open(ctx)
		if err == nil {
			return ch, release, notices
		}
		if errors.Is(err, runtime.ErrClosed) || ctx.Err() != nil {
			return nil, nil, nil
		}
		n.p.log.Debug("queuey: cannot bind to the control exchange again; trying again", "error", err, "after", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, nil
		case <-t.C:
		}
		backoff = min(backoff*2, time.Second)
	}
}

// wake marks queue to be read, or every watched queue when queue is "".
func (n *pauseNotices) wake(queue string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for q := range n.watches {
		if queue == "" || q == queue {
			n.markLocked(q)
		}
	}
}

// reads runs the passes, one at a time, as queues are marked, and marks
// every watched queue every recheckDelay: it ends with the backend.
func (n *pauseNotices) reads() {
	recheck := time.NewTimer(recheckDelay(n.size()))
	defer recheck.Stop()
	for {
		select {
		case <-n.p.life.done():
			n.mu.Lock()
			p := n.next
			n.next = nil
			n.mu.Unlock()
			if p != nil {
				close(p.done)
			}
			return
		case <-n.kick:
		case <-recheck.C:
			n.wake("")
			recheck.Reset(recheckDelay(n.size()))
		}
		n.mu.Lock()
		p := n.next
		n.next = nil
		n.mu.Unlock()
		if p != nil {
			n.pass(p)
		}
	}
}

// pass reads the markers of p's queues and sends each watch of them its
// state; a queue it cannot read keeps its last state, logged for the
// watches that have one.
func (n *pauseNotices) pass(p *pausePass) {
	defer close(p.done)
	tctx, tcancel := context.WithTimeout(context.Background(), pausePassTimeout)
	defer tcancel()
	ctx, cancel := n.p.life.until(tctx)
	defer cancel()
	queues := slices.Collect(maps.Keys(p.queues))
	paused, errs := n.read(ctx, queues)
	p.errs = errs
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, q := range queues {
		err := errs[q]
		for w := range n.watches[q] {
			switch {
			case err == nil:
				w.send(paused[i])
			case w.started:
				n.p.log.Warn("queuey: cannot read whether the queue is paused; keeping the last state", "queue", q, "paused", w.last, "error", err)
			}
		}
	}
}

// pausePassTimeout bounds one read of markers, and pauseProbeTimeout its
// probes, after which the markers not read yet are read one by one: the
// broker tells a connection it is blocked by an alarm only once it
// publishes, so a pass under an alarm waits that long first.
const (
	pausePassTimeout  = 30 * time.Second
	pauseProbeTimeout = 2 * time.Second
)

// read reports which of queues are paused. Each marker is probed with a
// message published to it through the default exchange, mandatory and
// expiring at once: the broker returns it when the marker does not exist
// and routes it, to be dropped, when it does; the probes of every queue
// are in flight together, on the publishing connection, so one pass costs
// about a round trip however many queues it reads. A marker whose probe
// fails (the publishing connection is blocked by a resource alarm, which
// holds publishes back, or its confirm is late) is read with a passive
// declare instead, a channel each on the consuming connection, so that a
// worker still starts consuming.
func (n *pauseNotices) read(ctx context.Context, queues []string) ([]bool, map[string]error) {
	paused := make([]bool, len(queues))
	errs := map[string]error{}
	var rest []int // read one by one
	if _, blocked := n.p.pubConn.blocked(); blocked == nil {
		msgs := make([]outMsg, len(queues))
		for i, q := range queues {
			msgs[i] = outMsg{key: pausedMarker(q), msg: amqp.Publishing{Expiration: "0"}}
		}
		pctx, cancel := context.WithTimeout(ctx, pauseProbeTimeout)
		for i, err := range n.p.pub.publishBatch(pctx, msgs) {
			switch {
			case err == nil:
				paused[i] = true
			case errors.Is(err, ErrUnroutable):
			default:
				rest = append(rest, i)
			}
		}
		cancel()
	} else {
		for i := range queues {
			rest = append(rest, i)
		}
	}
	if len(rest) == 0 {
		return paused, errs
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, i := range rest {
		q := queues[i]
		select {
		case n.p.checks <- struct{}{}:
		case <-ctx.Done():
			mu.Lock()
			errs[q] = fmt.Errorf("paused state of queue %q: %w", q, ctx.Err())
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			defer func() { <-n.p.checks }()
			p, err := n.p.paused(ctx, q)
			mu.Lock()
			defer mu.Unlock()
			paused[i] = p
			if err != nil {
				errs[q] = err
			}
		})
	}
	wg.Wait()
	return paused, errs
}
