package rabbitmq

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// corkMax is the most a corked connection holds back before it writes
// anyway.
const corkMax = 64 << 10

// corkConn is the socket under an AMQP connection. While it is corked, what
// the client library writes is held back and then written in one go when
// the last cork comes out: a batch of publishes, each of which the library
// flushes on its own, reaches the broker in a few large writes instead of
// one small write per message, which costs both ends a system call and a
// wake-up each.
//
// Nothing waits on a reply, or on a block of the connection by a resource
// alarm, while the connection is corked: a corked stretch only writes
// publishes, and its owner uncorks before it waits for any confirm or for
// a block to end. Other channels' frames written meanwhile (heartbeats
// too) wait with it, for as long as the stretch lasts: microseconds per
// publish, plus, for a single publish while others are in flight on the
// connection, one yield of the scheduler (see pubChannel.startIn).
type corkConn struct {
	net.Conn

	// singles counts the single publishes between their start and their
	// confirm on this connection.
	singles atomic.Int32

	mu    sync.Mutex
	corks int
	buf   []byte

	// dlMu serializes the deadline setters, which run on the client
	// library's heartbeater and on its handshake and close, so that
	// readDeadline always says what the socket has.
	dlMu sync.Mutex
	// readDeadline is the read deadline on the socket, 0 for none; see
	// SetReadDeadline.
	readDeadline time.Time
}

// deadlineSlack is how far a read deadline asked for may lie past the one
// on the socket before it is moved there, at most: never more than a
// quarter of the time left until it, so that a short heartbeat keeps its
// margin.
const deadlineSlack = time.Second

// SetReadDeadline moves the socket's read deadline to t, unless t lies
// later than the deadline already set by less than deadlineSlack (or a
// quarter of the time left until t, when that is less). The client
// library's heartbeater asks for a deadline three half heartbeats ahead
// after every frame it reads; moving the socket's each time, a runtime
// timer update under locks, was half of what the heartbeater cost. With
// the 10-second heartbeat asked for here, the broker is given up on
// between 14 and 15 seconds after its last frame, instead of at 15.
func (c *corkConn) SetReadDeadline(t time.Time) error {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	if set := c.readDeadline; !t.IsZero() && !set.IsZero() && !t.Before(set) {
		if ahead := t.Sub(set); ahead < min(deadlineSlack, time.Until(t)/4) {
			return nil
		}
	}
	c.readDeadline = t
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets both deadlines of the socket, as net.Conn's does.
func (c *corkConn) SetDeadline(t time.Time) error {
	c.dlMu.Lock()
	defer c.dlMu.Unlock()
	c.readDeadline = t
	return c.Conn.SetDeadline(t)
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corks > 0 && len(c.buf)+len(p) <= corkMax {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	if c.corks > 0 && len(p) <= corkMax {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// cork holds writes back until the matching uncork. A nil *corkConn does
// nothing.
func (c *corkConn) cork() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.corks++
	c.mu.Unlock()
}

// uncork ends a cork and, when it was the last, writes what was held. An
// error of that write breaks the connection; the library sees it on its
// next write or read, and the publishes held here are never confirmed.
func (c *corkConn) uncork() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corks--
	if c.corks == 0 {
		if err := c.flushLocked(); err != nil {
			_ = c.Conn.Close()
		}
	}
}

func (c *corkConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > corkMax {
		c.buf = nil
	} else {
		c.buf = c.buf[:0]
	}
	return err
}
