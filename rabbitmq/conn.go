package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/syncx"
	"github.com/queuey/queuey/runtime"
)

// dialTimeout bounds a TCP connect to one node and the AMQP handshake after
// it.
const dialTimeout = 10 * time.Second

// closeTimeout bounds how long closing a connection waits for the broker's
// close-ok before it drops the socket.
const closeTimeout = time.Second

// Redial backoff: the first dial after a loss goes at once; each failed
// round after it waits a jittered delay that doubles from redialMin up to
// redialMax, and the first success starts it again from zero.
const (
	redialMin = 25 * time.Millisecond
	redialMax = 500 * time.Millisecond
)

// redialBackoff is the wait before dial round n+1 after n failed rounds in
// a row: none after no failure, else between half and all of
// redialMin·2^(n-1), capped at redialMax.
func redialBackoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := redialMin << min(n-1, 10)
	d = min(d, redialMax)
	return syncx.Jitter(d)
}

// connection owns one AMQP connection: the only place one is dialled, so
// that replacing a lost one happens here. A channel asked for after the
// connection died is opened on a freshly dialled one; channels of the old
// connection fail on their own and their owners ask again.
//
// A dial round tries every node once, starting with the one after the node
// of the connection that was lost, so a client whose node died carries on
// through another. One round is in flight at a time, run by a goroutine of
// its own: no lock is held while it waits on the network, and every caller
// waits for it only as long as its context allows.
type connection struct {
	urls []string // Dial's url first, then Options.Nodes
	name string
	log  *slog.Logger

	mu      sync.Mutex
	conn    *amqp.Connection
	node    int           // the node conn is, or was last, on
	next    int           // the node the next round starts with
	round   chan struct{} // closed when the round in flight ends; nil when none
	fails   int           // failed rounds in a row
	lastErr error         // why the last round failed
	closed  bool
	done    chan struct{} // closed by close: ends the round in flight
	block   *blockState   // of conn
	cork    *corkConn     // conn's socket
	// dropped is the last AMQP connection drop took down.
	dropped *amqp.Connection
}

// errConnClosed is runtime.ErrClosed of the connection called name,
// closed with its backend.
func errConnClosed(name string) error {
	return fmt.Errorf("rabbitmq: %s connection: %w", name, runtime.ErrClosed)
}

func newConnection(urls []string, name string, log *slog.Logger) *connection {
	return &connection{urls: urls, name: name, log: log, done: make(chan struct{})}
}

// dialConnection returns a connection dialled once over urls, in order.
func dialConnection(ctx context.Context, urls []string, name string, log *slog.Logger) (*connection, error) {
	c := newConnection(urls, name, log)
	if _, err := c.get(ctx); err != nil {
		_ = c.close()
		return nil, err
	}
	return c, nil
}

// get returns the live connection. When the last one died it joins the
// dial round in flight, or starts one, and waits for it, at most until ctx
// ends.
func (c *connection) get(ctx context.Context) (*amqp.Connection, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errConnClosed(c.name)
	}
	if c.conn != nil && !c.conn.IsClosed() {
		conn := c.conn
		c.mu.Unlock()
		return conn, nil
	}
	if c.round == nil {
		c.round = make(chan struct{})
		go c.redial(c.round, redialBackoff(c.fails))
	}
	round := c.round
	c.mu.Unlock()

	select {
	case <-round:
	case <-ctx.Done():
		return nil, fmt.Errorf("rabbitmq: %s connection: waiting for a dial: %w", c.name, ctx.Err())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return nil, errConnClosed(c.name)
	case c.conn != nil && !c.conn.IsClosed():
		return c.conn, nil
	case c.lastErr != nil:
		return nil, c.lastErr
	default:
		return nil, fmt.Errorf("rabbitmq: %s connection lost right after it was dialled", c.name)
	}
}

// redial runs one dial round after waiting backoff, records its outcome and
// closes round.
func (c *connection) redial(round chan struct{}, backoff time.Duration) {
	defer close(round)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	if backoff > 0 {
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	conn, sock, node, errs := c.dialNodes(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.round = nil
	if conn != nil && c.closed {
		_ = conn.CloseDeadline(time.Now().Add(closeTimeout))
		return
	}
	if conn == nil {
		c.fails++
		c.lastErr = errors.Join(errs...)
		if c.lastErr == nil {
			c.lastErr = errConnClosed(c.name)
		}
		// Only a connection that was up and was lost is dialled again, by
		// its next use; a first dial's failure goes to its caller (Dial
		// gives up and closes), and a closed connection dials no more.
		if c.fails == 1 && c.conn != nil && !c.closed {
			c.log.Warn("queuey: cannot reach the broker; dialling again", "connection", c.name, "error", c.lastErr)
		}
		return
	}
	if c.fails > 0 || c.conn != nil {
		c.log.Info("queuey: connected to the broker again", "connection", c.name, "node", redact(c.urls[node]), "failed_rounds", c.fails)
	}
	c.conn, c.cork, c.fails, c.lastErr = conn, sock, 0, nil
	c.node, c.next = node, (node+1)%len(c.urls)
	c.block = watchBlocked(conn)
}

// dialNodes dials the nodes once each, from the one after the node last
// lost, until one answers or ctx ends: its connection and socket and the
// node's index, or nil and every dial's error.
func (c *connection) dialNodes(ctx context.Context) (*amqp.Connection, *corkConn, int, []error) {
	c.mu.Lock()
	start := c.next
	c.mu.Unlock()
	var errs []error
	for i := range c.urls {
		if ctx.Err() != nil {
			break
		}
		node := (start + i) % len(c.urls)
		conn, sock, err := c.dial(ctx, c.urls[node])
		if err == nil {
			return conn, sock, node, nil
		}
		errs = append(errs, err)
	}
	return nil, nil, 0, errs
}

// dial opens an AMQP connection to url, bounded by dialTimeout and by ctx,
// which also interrupts the handshake.
func (c *connection) dial(ctx context.Context, url string) (*amqp.Connection, *corkConn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	// A cancelled round ends a handshake stuck on a silent node: the
	// socket's deadline is moved to the past, until the handshake is done.
	var (
		mu     sync.Mutex
		opened bool
		stops  []func() bool
		sock   *corkConn
	)
	cfg := amqp.Config{
		Heartbeat:  10 * time.Second,
		Locale:     "en_US",
		Properties: amqp.Table{"connection_name": c.name},
		Dial: func(network, addr string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			// Bound the handshake too; amqp091-go clears the deadline
			// once the connection is open.
			if dl, ok := ctx.Deadline(); ok {
				_ = conn.SetDeadline(dl)
			}
			mu.Lock()
			defer mu.Unlock()
			sock = &corkConn{Conn: conn}
			stops = append(stops, context.AfterFunc(ctx, func() {
				mu.Lock()
				defer mu.Unlock()
				if !opened {
					_ = conn.SetDeadline(time.Unix(1, 0))
				}
			}))
			return sock, nil
		},
	}
	conn, err := amqp.DialConfig(url, cfg)
	mu.Lock()
	opened = true
	for _, stop := range stops {
		stop()
	}
	mu.Unlock()
	if err != nil {
		return nil, nil, fmt.Errorf("rabbitmq: dial %s (%s): %w", redact(url), c.name, err)
	}
	return conn, sock, nil
}

// channel opens a channel on the live connection, waiting for the broker's
// answer only as long as ctx allows. A connection blocked by a resource
// alarm reads nothing, so the open waits for the block to end first.
func (c *connection) channel(ctx context.Context) (*amqp.Channel, error) {
	ch, _, err := c.channelConn(ctx)
	return ch, err
}

// channelConn is channel, and returns the connection the channel is on.
func (c *connection) channelConn(ctx context.Context) (*amqp.Channel, *amqp.Connection, error) {
	conn, err := c.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	what := fmt.Sprintf("rabbitmq: open channel on %s connection", c.name)
	if err := c.awaitUnblocked(ctx); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	ch, err := callCtx(ctx, conn.Channel, func(ch *amqp.Channel) { _ = ch.Close() })
	if err != nil {
		return nil, nil, c.blockedError(ctx, brokerError(what, err))
	}
	return ch, conn, nil
}

// sock returns the socket under conn, to cork for a batch of publishes,
// or nil when conn is no longer the live connection.
func (c *connection) sock(conn *amqp.Connection) *corkConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != conn {
		return nil
	}
	return c.cork
}

// channelMax is the live connection's negotiated channel_max, or
// amqp091-go's default when there is none.
func (c *connection) channelMax() uint16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil || c.conn.Config.ChannelMax == 0 {
		return defaultChannelMax
	}
	return c.conn.Config.ChannelMax
}

// defaultChannelMax is RabbitMQ's default channel_max, and amqp091-go's.
const defaultChannelMax = 2047

// frameMax is the live connection's negotiated frame_max (0: no limit),
// or the last one's, or RabbitMQ's default before the first dial.
func (c *connection) frameMax() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return defaultFrameMax
	}
	return c.conn.Config.FrameSize
}

// defaultFrameMax is RabbitMQ's default frame_max, and amqp091-go's.
const defaultFrameMax = 131072

// awaitUnblocked waits until the connection is not blocked by a resource
// alarm, and fails with ErrBlocked when ctx ends first.
func (c *connection) awaitUnblocked(ctx context.Context) error {
	reason, unblocked := c.blocked()
	if unblocked == nil {
		return nil
	}
	select {
	case <-unblocked:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w (%s): %w", ErrBlocked, reason, ctx.Err())
	}
}

// blockedError adds ErrBlocked to err, an operation that ended with ctx,
// when the connection is blocked by a resource alarm: that is why the
// broker did not answer.
func (c *connection) blockedError(ctx context.Context, err error) error {
	if ctx.Err() == nil || errors.Is(err, ErrBlocked) {
		return err
	}
	if reason, unblocked := c.blocked(); unblocked != nil {
		return fmt.Errorf("%w (%s): %w", ErrBlocked, reason, err)
	}
	return err
}

// callCtx runs fn, which waits on the broker and takes no context, and
// returns its result, or ctx's error once ctx ends first. A result that
// comes after that is handed to undo, if any. fn returns at the latest when
// its connection closes (a stalled one is closed by its heartbeat).
func callCtx[T any](ctx context.Context, fn func() (T, error), undo func(T)) (T, error) {
	type result struct {
		v   T
		err error
	}
	res := make(chan result, 1)
	var abandoned sync.Mutex
	gone := false
	go func() {
		v, err := fn()
		abandoned.Lock()
		defer abandoned.Unlock()
		if gone {
			if err == nil && undo != nil {
				undo(v)
			}
			return
		}
		res <- result{v, err}
	}()
	select {
	case r := <-res:
		return r.v, r.err
	case <-ctx.Done():
		abandoned.Lock()
		defer abandoned.Unlock()
		select {
		case r := <-res:
			return r.v, r.err
		default:
		}
		gone = true
		var zero T
		return zero, ctx.Err()
	}
}

// drop drops conn, an AMQP connection of c whose broker did not answer in
// time, with abort, and reports whether this call did: one that finds
// conn dropped or closed already does nothing, so that the channels of a
// connection giving up together decide it once.
func (c *connection) drop(conn *amqp.Connection) bool {
	c.mu.Lock()
	if c.dropped == conn || conn.IsClosed() {
		c.mu.Unlock()
		return false
	}
	c.dropped = conn
	c.mu.Unlock()
	abort(conn)
	return true
}

// url returns the URL of the node the connection is on, or was last on:
// Dial's url before the first dial.
func (c *connection) url() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urls[c.node]
}

// serverVersion returns the broker's "version" server property, or "".
func (c *connection) serverVersion() string { return c.serverProperty("version") }

// serverProperty returns the broker's server property name, when it is a
// string, or "".
func (c *connection) serverProperty(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return ""
	}
	v, _ := c.conn.Properties[name].(string)
	return v
}

// blocked returns the reason and an unblock notice when the live
// connection is blocked by a resource alarm, and a nil channel when it is
// not.
func (c *connection) blocked() (string, <-chan struct{}) {
	c.mu.Lock()
	b := c.block
	c.mu.Unlock()
	if b == nil {
		return "", nil
	}
	return b.get()
}

// abort drops conn's socket without waiting for the broker: for a
// connection that stopped answering. The next use dials again.
func abort(conn *amqp.Connection) {
	_ = conn.CloseDeadline(time.Now())
}

func (c *connection) close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	conn, round := c.conn, c.round
	c.mu.Unlock()
	if round != nil {
		<-round
	}
	if conn == nil || conn.IsClosed() {
		return nil
	}
	// A broker that stopped answering never sends close-ok: wait a
	// bounded time, then drop the socket.
	if err := conn.CloseDeadline(time.Now().Add(closeTimeout)); err != nil && !errors.Is(err, amqp.ErrClosed) {
		return fmt.Errorf("rabbitmq: close %s connection: %w", c.name, err)
	}
	return nil
}

// redact hides the password of an AMQP URL, for logs and errors.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}

// checkURL refuses a URL amqp091-go cannot dial. The error never quotes the
// URL: its password would be in it.
func checkURL(what, raw string) error {
	if _, err := amqp.ParseURI(raw); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%w: %s is not an AMQP URL (amqp://user:password@host:port/vhost): %v", runtime.ErrInvalidOption, what, err)
	}
	return nil
}
