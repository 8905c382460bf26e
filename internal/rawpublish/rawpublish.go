// Package rawpublish puts bodies that are not envelopes on a queue of a
// runtime.MemoryBackend, as a foreign producer might: the tests of this
// module make poison messages with it, while package runtime offers
// applications no way to publish anything but an envelope.
package rawpublish

import "context"

// ToMemory puts body on queue of b, a *runtime.MemoryBackend, as a message
// of its own. A body that is not a msgpack Envelope of the queue is poison:
// it is moved to the dead letters when it reaches a consumer. Package
// runtime sets ToMemory when it is initialised.
var ToMemory func(ctx context.Context, b any, queue string, body []byte) error
