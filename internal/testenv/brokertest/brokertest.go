// Package brokertest gates tests and benchmarks that need a RabbitMQ, and is
// the one home of where that broker is. Every test reads it from the
// environment, so each suite runs against whichever broker make test
// points it at (3.x and 4.x, side by side on ports of their own):
//
//   - QUEUEY_AMQP_URL: the AMQP URL (default
//     amqp://guest:guest@127.0.0.1:5672/);
//   - QUEUEY_MANAGEMENT_URL: the management HTTP API with credentials
//     (default: the AMQP URL's host on port 15672 with its credentials);
//   - QUEUEY_RABBITMQ_NODE: the node name that rabbitmqctl is given with
//     -n (default rabbit@localhost);
//   - QUEUEY_RABBITMQCTL: the command that runs rabbitmqctl against that
//     node, split at spaces (default: rabbitmqctl -n NODE); a broker in a
//     chroot has its own (scripts/broker4.sh ctl).
//
// Tests skip when no broker answers, except when CI or
// QUEUEY_REQUIRE_BROKER is set: then they fail.
package brokertest

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// Environment variables that say where the broker under test is.
const (
	URLEnv           = "QUEUEY_AMQP_URL"
	ManagementURLEnv = "QUEUEY_MANAGEMENT_URL"
	NodeEnv          = "QUEUEY_RABBITMQ_NODE"
	CtlEnv           = "QUEUEY_RABBITMQCTL"
)

// DefaultURL is the broker tests use when QUEUEY_AMQP_URL is unset.
const DefaultURL = "amqp://guest:guest@127.0.0.1:5672/"

// DefaultManagementPort is the port of the management API that
// ManagementURL derives from the AMQP URL when QUEUEY_MANAGEMENT_URL is
// unset.
const DefaultManagementPort = 15672

// DefaultNode is the node name tests give rabbitmqctl when
// QUEUEY_RABBITMQ_NODE is unset: the one scripts/broker.sh's broker has.
const DefaultNode = "rabbit@localhost"

// URL returns QUEUEY_AMQP_URL, or DefaultURL.
func URL() string {
	if u := os.Getenv(URLEnv); u != "" {
		return u
	}
	return DefaultURL
}

// ManagementURL returns QUEUEY_MANAGEMENT_URL or, when it is unset, the
// management API of URL's broker: its host on DefaultManagementPort with
// its credentials (https for amqps). It is "" only when URL does not
// parse, which Require reports.
func ManagementURL() string {
	if u := os.Getenv(ManagementURLEnv); u != "" {
		return u
	}
	u, err := amqp.ParseURI(URL())
	if err != nil {
		return ""
	}
	scheme := "http"
	if u.Scheme == "amqps" {
		scheme = "https"
	}
	m := url.URL{Scheme: scheme, Host: net.JoinHostPort(u.Host, strconv.Itoa(DefaultManagementPort)), Path: "/", User: url.UserPassword(u.Username, u.Password)}
	return m.String()
}

// Node returns QUEUEY_RABBITMQ_NODE, or DefaultNode: the name of the
// broker's node, for rabbitmqctl -n.
func Node() string {
	if n := os.Getenv(NodeEnv); n != "" {
		return n
	}
	return DefaultNode
}

// Ctl returns the command that runs rabbitmqctl with args against the
// broker under test: QUEUEY_RABBITMQCTL's words then args, or
// rabbitmqctl -n Node() then args.
func Ctl(ctx context.Context, args ...string) *exec.Cmd {
	cmd := []string{"rabbitmqctl", "-n", Node()}
	if c := strings.Fields(os.Getenv(CtlEnv)); len(c) > 0 {
		cmd = c
	}
	return exec.CommandContext(ctx, cmd[0], append(cmd[1:], args...)...)
}

// Require returns the broker URL when a broker answers there. Otherwise it
// skips tb, or fails it when CI or QUEUEY_REQUIRE_BROKER is set.
func Require(tb testing.TB) string {
	tb.Helper()
	url := URL()
	u, err := amqp.ParseURI(url)
	if err != nil {
		tb.Fatalf("%s=%q: %v", URLEnv, url, err)
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
