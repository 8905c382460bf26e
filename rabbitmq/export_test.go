package rabbitmq

import amqp "github.com/rabbitmq/amqp091-go"

// Connections returns b's publishing and consuming AMQP connections as they
// are now, for tests that check they survive something.
func Connections(b *Backend) (publish, consume *amqp.Connection) {
	b.pubConn.mu.Lock()
	publish = b.pubConn.conn
	b.pubConn.mu.Unlock()
	b.conConn.mu.Lock()
	consume = b.conConn.conn
	b.conConn.mu.Unlock()
	return publish, consume
}
