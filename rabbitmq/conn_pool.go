package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// consumePool spreads the channels that live as long as a consumer (one
// per consumed queue, and the one that hears pause notices) over as many
// consuming connections as they need, at most perConn channels each.
// A connection has at most channel_max channels (2,047 by default), so
// one connection would refuse the 2,048th queue; perConn stays well below
// that, leaving the first connection room for the short-lived channels of
// checks and admin calls, which open there.
//
// Each connection of the pool redials on its own after a loss, over the
// same nodes; the channels it held fail, and their owners, asking again,
// get one on whichever connection has room. Connections are dialled when
// first needed; one other than the first that holds no channel for
// idleConnGrace is closed, so that a worker whose queues went away does
// not keep their connections.
type consumePool struct {
	urls []string
	name string
	log  *slog.Logger

	mu      sync.Mutex
	conns   []*pooledConn // conns[0] is the first, dialled by Dial
	perConn int
	closed  bool
}

type pooledConn struct {
	c    *connection
	open int // channels handed out and not released
	// idle closes the connection once it has held no channel for
	// idleConnGrace; nil when it holds some, or is the first.
	idle  *time.Timer
	idles int // times it was left with no channel
}

// idleConnGrace is how long a consuming connection other than the first
// is kept with no channel on it, for the consumers that subscribe again
// right after theirs ended (a pause, a lost channel).
const idleConnGrace = 5 * time.Second

// maxPerConn caps the channels one consuming connection holds, however
// high the broker's channel_max: one connection's frames are read by one
// goroutine and written to one socket.
const maxPerConn = 1000

// channelsPerConn is how many long-lived channels a connection whose
// negotiated channel_max is channelMax holds: half of it, at most
// maxPerConn.
func channelsPerConn(channelMax uint16) int {
	return max(1, min(int(channelMax)/2, maxPerConn))
}

// newConsumePool returns a pool whose first connection is first, dialled.
func newConsumePool(first *connection, urls []string, name string, log *slog.Logger) *consumePool {
	p := &consumePool{urls: urls, name: name, log: log, conns: []*pooledConn{{c: first}}}
	p.perConn = channelsPerConn(first.channelMax())
	return p
}

// pooledChannel is a channel of the pool: ch, on conn, an AMQP
// connection of c; release gives its place back once the channel is
// closed or lost (more calls of release do nothing).
type pooledChannel struct {
	ch      *amqp.Channel
	conn    *amqp.Connection
	c       *connection
	release func()
}

// channel opens a channel on the first connection with room and returns
// it.
func (p *consumePool) channel(ctx context.Context) (pooledChannel, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return pooledChannel{}, errConnClosed(p.name)
	}
	var pc *pooledConn
	for _, c := range p.conns {
		if c.open < p.perConn {
			pc = c
			break
		}
	}
	if pc == nil {
		name := fmt.Sprintf("%s %d", p.name, len(p.conns)+1)
		pc = &pooledConn{c: newConnection(p.urls, name, p.log)}
		p.conns = append(p.conns, pc)
	}
	pc.open++
	if pc.idle != nil {
		pc.idle.Stop()
		pc.idle = nil
	}
	p.mu.Unlock()
	release := sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		pc.open--
		if pc.open == 0 && !p.closed && pc != p.conns[0] {
			pc.idles++
			n := pc.idles
			pc.idle = time.AfterFunc(idleConnGrace, func() { p.closeIdle(pc, n) })
		}
	})
	ch, conn, err := pc.c.channelConn(ctx)
	if err != nil {
		release()
		return pooledChannel{}, err
	}
	return pooledChannel{ch: ch, conn: conn, c: pc.c, release: release}, nil
}

// closeIdle closes pc, and takes it out of the pool, when it has held no
// channel since it was last left idle, its idles-th time.
func (p *consumePool) closeIdle(pc *pooledConn, idles int) {
	p.mu.Lock()
	if pc.idles != idles || pc.open > 0 || p.closed {
		p.mu.Unlock()
		return
	}
	p.conns = slices.DeleteFunc(p.conns, func(c *pooledConn) bool { return c == pc })
	p.mu.Unlock()
	if err := pc.c.close(); err != nil {
		p.log.Debug("queuey: close idle consuming connection", "connection", pc.c.name, "error", err)
	}
}

// connections returns the live AMQP connections of the pool, first first,
// for tests.
func (p *consumePool) connections() []*amqp.Connection {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*amqp.Connection
	for _, pc := range p.conns {
		pc.c.mu.Lock()
		if pc.c.conn != nil && !pc.c.conn.IsClosed() {
			out = append(out, pc.c.conn)
		}
		pc.c.mu.Unlock()
	}
	return out
}

// close closes every connection of the pool.
func (p *consumePool) close() error {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	for _, pc := range conns {
		if pc.idle != nil {
			pc.idle.Stop()
		}
	}
	p.mu.Unlock()
	var errs []error
	for _, pc := range conns {
		errs = append(errs, pc.c.close())
	}
	return errors.Join(errs...)
}
