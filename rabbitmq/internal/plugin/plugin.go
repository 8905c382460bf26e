// Package plugin holds the pure parts of the "plugin" delay mode: waits held
// by RabbitMQ's delayed-message-exchange plugin in an x-delayed-message
// exchange instead of hold queues. No I/O, no broker.
//
// For logical queue q the exchange is q.delay, or a named exchange several
// queues share. It is declared durable with x-delayed-type=direct and q is
// bound to it with routing key q. A wait is published to the exchange with
// routing key q and the delay in the x-delay header, in milliseconds; the
// plugin routes the message to q when it is due. One exchange serves every
// delay, and a short wait is never held behind a long one.
//
// The plugin does not support mandatory publishing: it returns every
// mandatory publish as unroutable, since nothing is routed at publish time.
// Plugin waits are therefore confirmed but not mandatory, and the backend
// checks instead, when it declares q, that the exchange exists, and binds q
// to it.
package plugin

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

// Names of the plugin's exchange type, its argument and header.
const (
	ExchangeType   = "x-delayed-message"
	ArgDelayedType = "x-delayed-type"
	HeaderDelay    = "x-delay"
	// DefaultExchangeSuffix names a queue's own delay exchange: q.delay.
	DefaultExchangeSuffix = ".delay"
	// MaxDelay is the longest x-delay: a signed 32-bit millisecond value.
	MaxDelay = (1<<31 - 1) * time.Millisecond
	// EnableCommand enables the plugin on a broker node.
	EnableCommand = "rabbitmq-plugins enable rabbitmq_delayed_message_exchange"
)

var (
	// ErrPluginMissing is returned when the broker does not know the
	// x-delayed-message exchange type.
	ErrPluginMissing = errors.New("rabbitmq: the delayed-message-exchange plugin is not enabled on the broker")
	// ErrNotProvisioned is returned when the operator provisions the delay
	// exchanges and one does not exist.
	ErrNotProvisioned = errors.New("rabbitmq: delay exchange not provisioned")
)

// ExchangeName returns the delay exchange of q: q.DelayExchange, or
// q.Name + ".delay".
func ExchangeName(q runtime.QueueConfig) string {
	if q.DelayExchange != "" {
		return q.DelayExchange
	}
	return q.Name + DefaultExchangeSuffix
}

// ExchangeArgs returns the declare arguments of a delay exchange.
func ExchangeArgs() amqp.Table {
	return amqp.Table{ArgDelayedType: "direct"}
}

// DelayHeader returns the x-delay value for d, which the caller has already
// rounded up to its granularity. A delay above MaxDelay is refused with
// runtime.ErrDelayTooLong, never clamped.
func DelayHeader(d time.Duration) (int32, error) {
	if d < 0 {
		return 0, fmt.Errorf("rabbitmq: negative delay %v", d)
	}
	if d > MaxDelay {
		return 0, fmt.Errorf("%w: %v exceeds the plugin's x-delay limit (%v)", runtime.ErrDelayTooLong, d, MaxDelay)
	}
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return int32(ms), nil
}

// Publishing returns p prepared for a wait of d through the delay exchange:
// p's headers are copied and x-delay is added. Publish it to the exchange
// with the queue's name as routing key, mandatory=false.
func Publishing(p amqp.Publishing, d time.Duration) (amqp.Publishing, error) {
	ms, err := DelayHeader(d)
	if err != nil {
		return p, err
	}
	h := make(amqp.Table, len(p.Headers)+1)
	for k, v := range p.Headers {
		h[k] = v
	}
	h[HeaderDelay] = ms
	p.Headers = h
	return p, nil
}

// IsPluginMissing reports whether err is the broker's answer to declaring an
// exchange of a type it does not know: "unknown exchange type
// 'x-delayed-message'". RabbitMQ 3.x answers 503 COMMAND_INVALID, which
// closes the whole connection, so probe on a connection of its own;
// RabbitMQ 4.x answers 406 PRECONDITION_FAILED, which closes the channel
// alone, and which must not be taken for an exchange that exists with
// other arguments (MismatchError).
func IsPluginMissing(err error) bool {
	var ae *amqp.Error
	if !errors.As(err, &ae) {
		return false
	}
	return (ae.Code == amqp.CommandInvalid || ae.Code == amqp.PreconditionFailed) &&
		strings.Contains(ae.Reason, "unknown exchange type") && strings.Contains(ae.Reason, ExchangeType)
}

// MissingError explains a missing plugin for queue q and how to enable it.
func MissingError(q string, cause error) error {
	return fmt.Errorf("%w: queue %q has delay=plugin, but declaring an %s exchange failed (%v); enable it on every node with `%s` (it cannot run on RabbitMQ 4.3 and later), or use delay=queue (hold queues, no plugin)",
		ErrPluginMissing, q, ExchangeType, cause, EnableCommand)
}

// NotProvisionedError explains a delay exchange that does not exist when
// the operator provisions the delay exchanges.
func NotProvisionedError(q, exchange string, cause error) error {
	return fmt.Errorf("%w: queue %q has delay=plugin, but exchange %q does not exist (%v): provision it (durable, type %s, %s=direct; the backend binds %q to it with routing key %q), or let the backend declare it",
		ErrNotProvisioned, q, exchange, cause, ExchangeType, ArgDelayedType, q, q)
}

// noExchangeRE matches the broker's reason for a publish to an exchange
// that does not exist.
var noExchangeRE = regexp.MustCompile(`no exchange '((?:[^']|'')*)' in vhost`)

// MissingExchange reports whether err is the broker's answer to a publish
// to an exchange that does not exist (404 NOT_FOUND, which closes the
// channel), and which exchange it names.
func MissingExchange(err error) (string, bool) {
	var ae *amqp.Error
	if !errors.As(err, &ae) || ae.Code != amqp.NotFound {
		return "", false
	}
	m := noExchangeRE.FindStringSubmatch(ae.Reason)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// GoneError explains a wait whose delay exchange does not exist (any
// more): it was declared or checked when q was declared, and deleted since.
func GoneError(q, exchange string, cause error) error {
	return fmt.Errorf("%w: queue %q has delay=plugin, but its delay exchange %q does not exist (any more): the wait was not stored (%v); declare the queue again, which declares or checks the exchange and binds the queue to it",
		ErrNotProvisioned, q, exchange, cause)
}

// MismatchError explains a delay exchange that exists with another type or
// other arguments than a delay exchange has.
func MismatchError(q, exchange string, cause error) error {
	return fmt.Errorf("rabbitmq: queue %q has delay=plugin, but exchange %q already exists with another type or arguments than type %s, %s=direct (%v): delete it so that it is declared again, or name another delay exchange",
		q, exchange, ExchangeType, ArgDelayedType, cause)
}
