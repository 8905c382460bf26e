package admin

import (
	"context"

	"github.com/queuey/queuey/runtime"
)

// LimitState is the state of one queue's global limits
// (runtime.QueueConfig's Limit, Rate and LimitKey): the limit the backend
// holds, how much of it is in use and how many jobs wait for it.
type LimitState = runtime.LimitState

// LimitReader is implemented by backends that hold global limits
// (runtime.Limiter): it reads how far each limited queue's limits are
// taken and how many jobs wait for them. It is an optional capability
// beside runtime.Backend.
type LimitReader interface {
	// LimitStates returns the state of the limits of each of queues that
	// has any (runtime.QueueConfig.Limited), in the order given; with no
	// queues, of every limited queue the backend finds by itself, sorted
	// by name: the RabbitMQ backend finds them on the broker, by the
	// queues that hold their limits; a backend that cannot find them
	// returns none. A backend that cannot read what other processes hold
	// (RabbitMQ without its management API) returns an error wrapping
	// ErrCannotList.
	LimitStates(ctx context.Context, queues []runtime.QueueConfig) ([]LimitState, error)
}
