package rabbitmq

import (
	"sync"

	amqp "github.com/rabbitmq/amqp091-go"
)

// blockState follows connection.blocked and connection.unblocked of one
// AMQP connection: the broker stops reading a publishing connection while a
// resource alarm (memory, disk) is on.
type blockState struct {
	mu        sync.Mutex
	reason    string
	unblocked chan struct{} // closed when the block ends; nil while not blocked
}

// watchBlocked starts following conn's blocks. The goroutine ends when conn
// closes, which closes the notification channel.
func watchBlocked(conn *amqp.Connection) *blockState {
	b := &blockState{}
	notes := conn.NotifyBlocked(make(chan amqp.Blocking, 4))
	go func() {
		for n := range notes {
			b.set(n)
		}
		b.set(amqp.Blocking{Active: false}) // a closed connection blocks no one
	}()
	return b
}

func (b *blockState) set(n amqp.Blocking) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case n.Active && b.unblocked == nil:
		b.reason = n.Reason
		b.unblocked = make(chan struct{})
	case !n.Active && b.unblocked != nil:
		close(b.unblocked)
		b.unblocked = nil
	}
}

// get returns the broker's reason and a channel closed when the block ends,
// or a nil channel while the connection is not blocked.
func (b *blockState) get() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reason, b.unblocked
}
