package rabbitmq

import (
	"errors"
	"fmt"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/rabbitmq/internal/plugin"
	"github.com/queuey/queuey/runtime"
)

var (
	// ErrUnroutable is returned for a publish the broker returned
	// (basic.return) because no queue took it: the queue does not exist.
	ErrUnroutable = errors.New("rabbitmq: unroutable publish")
	// ErrNacked is returned for a publish the broker refused to store
	// (basic.nack).
	ErrNacked = errors.New("rabbitmq: publish nacked by the broker")
	// ErrNotConfirmed is returned for a publish whose confirm never came,
	// because its channel or connection closed, or whose caller stopped
	// waiting for it (its context ended; the error wraps the context's
	// too). The job may or may not be stored; it is reported as failed,
	// never as a success.
	ErrNotConfirmed = errors.New("rabbitmq: publish not confirmed")
	// ErrPluginMissing is returned by Declare of a plugin-mode queue when
	// the broker does not know the x-delayed-message exchange type: the
	// delayed-message-exchange plugin is not enabled.
	ErrPluginMissing = plugin.ErrPluginMissing
	// ErrDelayExchangeMissing is returned by Declare of a plugin-mode queue,
	// with Options.ProvisionedDelayExchange, when its delay exchange does
	// not exist, and by a wait of such a queue whose delay exchange was
	// deleted since.
	ErrDelayExchangeMissing = plugin.ErrNotProvisioned
	// ErrFieldTooLong is returned, before anything is sent, for a publish
	// with a field longer than an AMQP short string carries (255 bytes):
	// a job ID, a kind or a queue name. Sent, it would make the broker
	// close the publishing connection, failing every publish in
	// flight on it.
	ErrFieldTooLong = codec.ErrTooLong
	// ErrBlocked is returned for a publish made while the publishing
	// connection is blocked by a resource alarm of the broker (memory or
	// disk), once its context ends. It is also ErrNotConfirmed when the
	// publish was already sent: the broker may still store it once the
	// alarm clears.
	ErrBlocked = errors.New("rabbitmq: the broker blocks publishing (resource alarm)")
)

// errNoDeadLetterQueues is the error of reading, re-driving or purging the
// dead letters of a backend told not to declare dead-letter queues: it
// keeps none.
var errNoDeadLetterQueues = errors.New("rabbitmq: no dead letters are kept (Options.NoDeadLetterQueues)")

// brokerError wraps err from doing what, adding the broker's reply code
// meaning when err is a channel or connection exception (brokerReply).
func brokerError(what string, err error) error {
	return fmt.Errorf("%s: %w", what, brokerReply(err))
}

// brokerReply adds the meaning of the broker's reply code to err when it is
// a channel or connection exception, and returns it as it is otherwise.
func brokerReply(err error) error {
	var ae *amqp.Error
	if errors.As(err, &ae) {
		switch ae.Code {
		case amqp.NotFound:
			return fmt.Errorf("not found (404): %w", err)
		case amqp.PreconditionFailed:
			return fmt.Errorf("precondition failed (406): %w", err)
		case amqp.AccessRefused:
			return fmt.Errorf("access refused (403): %w", err)
		}
	}
	return err
}

// unknownQueue is runtime.ErrUnknownQueue of op: why says what is
// missing. Every such error of this package is made here.
func unknownQueue(op, why string) error {
	return fmt.Errorf("%s: %w: %s", op, runtime.ErrUnknownQueue, why)
}

// absentQueue is runtime.ErrUnknownQueue of op on queue, which does not
// exist on the broker, with what to do about it (errs.Unknown).
func absentQueue(op, queue string) error {
	if op == "" {
		return errs.Unknown(queue, "does not exist on the broker")
	}
	return fmt.Errorf("%s: %w", op, errs.Unknown(queue, "does not exist on the broker"))
}

// missingQueue makes err, from a publish onto queue through the default
// exchange, runtime.ErrUnknownQueue as well when the broker returned it
// unroutable: no queue of that name exists. The memory backend says the
// same of a queue never declared on it.
func missingQueue(queue string, err error) error {
	if !errors.Is(err, ErrUnroutable) {
		return err
	}
	return fmt.Errorf("%w (%w)", absentQueue("", queue), err)
}

// consumeError wraps err from doing what to start a consumer, and makes it
// runtime.ErrCannotConsume as well when trying again cannot help: the
// broker refused the queue (access refused, no such queue, held by an
// exclusive consumer, a precondition or an operation not allowed), or the
// connection has no channel left. A queue whose node is down is also
// "not found" (404), but comes back with its node: trying again helps.
func consumeError(what string, err error) error {
	werr := brokerError(what, err)
	if errors.Is(err, amqp.ErrChannelMax) || isNoQueue(err) {
		return fmt.Errorf("%w: %w", runtime.ErrCannotConsume, werr)
	}
	var ae *amqp.Error
	if errors.As(err, &ae) {
		switch ae.Code {
		case amqp.AccessRefused, amqp.ResourceLocked, amqp.PreconditionFailed, amqp.NotAllowed:
			return fmt.Errorf("%w: %w", runtime.ErrCannotConsume, werr)
		}
	}
	return werr
}

// isNoQueue reports whether err is the broker's 404 for a queue that does
// not exist ("NOT_FOUND - no queue 'q' in vhost '/'"), as opposed to one
// whose node is down or inaccessible.
func isNoQueue(err error) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == amqp.NotFound && strings.Contains(ae.Reason, "no queue")
}

func isCode(err error, code int) bool {
	var ae *amqp.Error
	return errors.As(err, &ae) && ae.Code == code
}
