package codec

import (
	"fmt"
	"math"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

// encodeLegacy encodes env, already checked by Encode, in the format of
// LegacyContentType.
func encodeLegacy(env *runtime.Envelope, o Options) (amqp.Publishing, error) {
	for k := range env.Headers {
		if n := len(UserHeaderPrefix) + len(k); n > MaxShortString {
			return amqp.Publishing{}, fmt.Errorf("encode job %q on queue %q: %w", env.ID, env.Queue,
				tooLong(fmt.Sprintf("header name %q with its prefix %q", clip(k), UserHeaderPrefix), n))
		}
	}
	h := make(amqp.Table, 6+len(env.Headers))
	h[HeaderAttempt] = int64(env.Attempt)
	h[HeaderMaxAttempts] = int64(env.MaxAttempts)
	h[HeaderPriority] = int64(env.Priority)
	h[HeaderEnqueuedAt] = unixNano(env.EnqueuedAt)
	h[HeaderQueue] = env.Queue
	if env.LastError != "" {
		h[HeaderLastError] = env.LastError
	}
	if o.DeadReason != "" {
		h[HeaderDeadReason] = o.DeadReason
	}
	for k, v := range env.Headers {
		h[UserHeaderPrefix+k] = v
	}
	return amqp.Publishing{
		Headers:      h,
		ContentType:  LegacyContentType,
		DeliveryMode: amqp.Persistent,
		Priority:     o.Priority,
		MessageId:    env.ID,
		Type:         env.Kind,
		Timestamp:    env.EnqueuedAt,
		Body:         env.Payload,
	}, nil
}

// decodeLegacy decodes an envelope of LegacyContentType: the payload is
// the body, every other field a header.
func decodeLegacy(d *amqp.Delivery) (*runtime.Envelope, error) {
	h := d.Headers
	attempt, err := intHeader(h, HeaderAttempt, 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	maxAttempts, err := intHeader(h, HeaderMaxAttempts, 1, math.MaxInt32)
	if err != nil {
		return nil, err
	}
	priority, err := intHeader(h, HeaderPriority, 0, math.MaxUint8)
	if err != nil {
		return nil, err
	}
	enqueuedAt, err := intHeader(h, HeaderEnqueuedAt, math.MinInt64, math.MaxInt64)
	if err != nil {
		return nil, err
	}
	queue, err := stringHeader(h, HeaderQueue, true)
	if err != nil {
		return nil, err
	}
	lastError, err := stringHeader(h, HeaderLastError, false)
	if err != nil {
		return nil, err
	}
	env := &runtime.Envelope{
		ID:          d.MessageId,
		Queue:       queue,
		Kind:        d.Type,
		Payload:     d.Body,
		Attempt:     int(attempt),
		MaxAttempts: int(maxAttempts),
		Priority:    uint8(priority),
		EnqueuedAt:  fromUnixNano(enqueuedAt),
		LastError:   lastError,
	}
	for k, v := range h {
		name, ok := strings.CutPrefix(k, UserHeaderPrefix)
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: header %q is %T, want string", ErrInvalid, k, v)
		}
		if env.Headers == nil {
			env.Headers = make(map[string]string)
		}
		env.Headers[name] = s
	}
	return env, nil
}

func intHeader(h amqp.Table, name string, lo, hi int64) (int64, error) {
	v, ok := h[name]
	if !ok {
		return 0, fmt.Errorf("%w: missing header %q", ErrInvalid, name)
	}
	var n int64
	switch x := v.(type) {
	case int64:
		n = x
	case int32:
		n = int64(x)
	case int16:
		n = int64(x)
	case int8:
		n = int64(x)
	case int:
		n = int64(x)
	case uint8:
		n = int64(x)
	case uint16:
		n = int64(x)
	case uint32:
		n = int64(x)
	default:
		return 0, fmt.Errorf("%w: header %q is %T, want an integer", ErrInvalid, name, v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%w: header %q = %d, want %d..%d", ErrInvalid, name, n, lo, hi)
	}
	return n, nil
}

func stringHeader(h amqp.Table, name string, required bool) (string, error) {
	v, ok := h[name]
	if !ok {
		if required {
			return "", fmt.Errorf("%w: missing header %q", ErrInvalid, name)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: header %q is %T, want string", ErrInvalid, name, v)
	}
	if required && s == "" {
		return "", fmt.Errorf("%w: header %q is empty", ErrInvalid, name)
	}
	return s, nil
}
