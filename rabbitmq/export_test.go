package rabbitmq

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
)

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

// SetBrokerVersion makes b act as if the broker were of version v, for
// tests of version-dependent declares on whatever broker runs.
func SetBrokerVersion(b *Backend, v string) {
	ver, err := topology.ParseVersion(v)
	if err != nil {
		panic(err)
	}
	b.version = ver
}
