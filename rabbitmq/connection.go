package rabbitmq

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

// dialTimeout bounds a TCP connect and the AMQP handshake after it.
const dialTimeout = 30 * time.Second

// connection owns one AMQP connection: the only place one is dialled, so
// that replacing a lost one happens here. A channel asked for after the
// connection died is opened on a freshly dialled one; channels of the old
// connection fail on their own and their owners ask again.
type connection struct {
	url  string
	name string

	mu     sync.Mutex
	conn   *amqp.Connection
	closed bool
}

func dialConnection(ctx context.Context, url, name string) (*connection, error) {
	c := &connection{url: url, name: name}
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return c, nil
}

func (c *connection) dial(ctx context.Context) (*amqp.Connection, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
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
			// Bound the handshake too; amqp091-go clears the deadline once
			// the connection is open.
			if dl, ok := ctx.Deadline(); ok {
				_ = conn.SetDeadline(dl)
			}
			return conn, nil
		},
	}
	conn, err := amqp.DialConfig(c.url, cfg)
	if err != nil {
		return nil, fmt.Errorf("rabbitmq: dial %s (%s): %w", redact(c.url), c.name, err)
	}
	return conn, nil
}

// get returns the live connection, dialling a new one when the last died.
func (c *connection) get(ctx context.Context) (*amqp.Connection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, fmt.Errorf("rabbitmq: %s connection: %w", c.name, runtime.ErrClosed)
	}
	if c.conn == nil || c.conn.IsClosed() {
		conn, err := c.dial(ctx)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	return c.conn, nil
}

// channel opens a channel on the live connection.
func (c *connection) channel(ctx context.Context) (*amqp.Channel, error) {
	conn, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	ch, err := conn.Channel()
	if err != nil {
		return nil, brokerError(fmt.Sprintf("rabbitmq: open channel on %s connection", c.name), err)
	}
	return ch, nil
}

// serverVersion returns the broker's "version" server property, or "".
func (c *connection) serverVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return ""
	}
	v, _ := c.conn.Properties["version"].(string)
	return v
}

func (c *connection) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.conn == nil || c.conn.IsClosed() {
		return nil
	}
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("rabbitmq: close %s connection: %w", c.name, err)
	}
	return nil
}

// redact hides the password of an AMQP URL for error messages.
func redact(url string) string {
	u, err := amqp.ParseURI(url)
	if err != nil {
		return "<unparsable URL>"
	}
	if u.Password != "" {
		u.Password = "xxx"
	}
	return u.String()
}
