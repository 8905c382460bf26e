// Package brokertest gates tests and benchmarks that need a RabbitMQ: they
// read QUEUEY_AMQP_URL (default amqp://guest:guest@127.0.0.1:5672/) and
// skip when no broker answers there, except when CI or
// QUEUEY_REQUIRE_BROKER is set: then they fail.
package brokertest

import (
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// DefaultURL is the broker tests use when QUEUEY_AMQP_URL is unset.
const DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"

// URL returns QUEUEY_AMQP_URL, or DefaultURL.
func URL() string {
	if u := os.Getenv("QUEUEY_AMQP_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Require returns the broker URL when a broker answers there. Otherwise it
// skips tb, or fails it when CI or QUEUEY_REQUIRE_BROKER is set.
func Require(tb testing.TB) string {
	tb.Helper()
	url := URL()
	u, err := amqp.ParseURI(url)
	if err != nil {
		tb.Fatalf("QUEUEY_AMQP_URL=%q: %v", url, err)
	}
	addr := net.JoinHostPort(u.Host, strconv.Itoa(u.Port))
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		conn.Close()
		return url
	}
	msg := "no RabbitMQ answers at " + addr + ": " + err.Error() + " (is rabbitmq-server running? make broker starts one)"
	if os.Getenv("CI") != "" || os.Getenv("QUEUEY_REQUIRE_BROKER") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

// DeleteQueues deletes queues on the broker at url, ignoring errors: it is
// clean-up. The deletes share one channel, and a new one is opened after a
// failed delete (which closes its channel), so thousands of queues go
// quickly.
func DeleteQueues(url string, names ...string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return
	}
	defer conn.Close()
	var ch *amqp.Channel
	for _, name := range names {
		if ch == nil || ch.IsClosed() {
			if ch, err = conn.Channel(); err != nil {
				return
			}
		}
		_, _ = ch.QueueDelete(name, false, false, false)
	}
}
