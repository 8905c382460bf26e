package runtime

import "fmt"

// DefaultMemoryMaxMessageSize is the largest job a MemoryBackend stores
// unless MemoryMaxMessageSize says otherwise: 16 MiB, the max_message_size
// RabbitMQ 4.x takes by default (3.x takes 128 MiB), so that a job the
// memory backend and package queueytest take is one a broker with its
// default settings takes too.
const DefaultMemoryMaxMessageSize = 16 << 20

// MemoryMaxMessageSize makes n bytes the largest job the backend stores, as
// rabbitmq.Options.MaxMessageSize does for a broker's max_message_size:
// set it to your broker's. Zero or less means DefaultMemoryMaxMessageSize;
// more than MaxJobSize means MaxJobSize.
func MemoryMaxMessageSize(n int) MemoryOption {
	return func(b *MemoryBackend) {
		if n > 0 {
			b.maxMessage = min(n, MaxJobSize)
		}
	}
}

// checkSize refuses env, before it is stored, when the message the
// RabbitMQ backend would publish for it could be larger than the backend's
// max message size: its payload alone, or an upper bound of its whole body
// (payload, headers, queue, last error and the fields around them, as the
// wire format lays them out), so that the memory backend refuses every job
// a broker with that max_message_size refuses, and at most some tens of
// bytes more near the limit.
func (b *MemoryBackend) checkSize(env *Envelope) error {
	limit := b.maxMessage
	if limit <= 0 {
		limit = DefaultMemoryMaxMessageSize
	}
	n := len(env.Payload)
	what := "payload"
	if n <= limit {
		n += memBodyOverhead + len(env.ID) + len(env.Queue) + len(env.Kind) + len(env.LastError)
		for k, v := range env.Headers {
			n += 10 + len(k) + len(v)
		}
		what = "message, with its headers and fields,"
	}
	if n > limit {
		return fmt.Errorf("%w: job %q on queue %q: its %s is %d bytes, over the max message size of %d (runtime.MemoryMaxMessageSize; a broker refuses a message over its max_message_size, 16 MiB by default on RabbitMQ 4.x, 128 MiB on 3.x)",
			ErrTooLarge, env.ID, env.Queue, what, n, limit)
	}
	return nil
}

// memBodyOverhead bounds the bytes of a message body that are not the
// payload, headers or strings: the fields' tags and lengths.
const memBodyOverhead = 64
