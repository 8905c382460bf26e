package rabbitmq_test

import (
	"strings"
	"testing"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestLimitQueueNames: the limits' queues are named as the admin API and
// every worker expect, and the longest fit an AMQP short string.
func TestLimitQueueNames(t *testing.T) {
	limitToken, limitLedger, rateToken, rateLedger, all := rabbitmq.LimitQueues("orders")
	want := []string{
		"queuey.limit.orders", "queuey.limit.orders.ledger", "queuey.limit.orders.lock",
		"queuey.rate.orders", "queuey.rate.orders.ledger", "queuey.rate.orders.lock",
		"queuey.rate.orders.s", "queuey.rate.orders.m", "queuey.rate.orders.h",
	}
	if strings.Join(all, " ") != strings.Join(want, " ") {
		t.Fatalf("limit queues = %q, want %q", all, want)
	}
	if limitToken != want[0] || limitLedger != want[1] || rateToken != want[3] || rateLedger != want[4] {
		t.Fatalf("names = %q %q %q %q", limitToken, limitLedger, rateToken, rateLedger)
	}
	_, _, _, _, all = rabbitmq.LimitQueues(strings.Repeat("q", runtime.MaxQueueNameLen))
	for _, name := range all {
		if len(name) > 255 {
			t.Errorf("%q is %d bytes, want at most 255", name, len(name))
		}
	}
}

// TestLimitKeyLeaseNames: a key of up to 64 of [A-Za-z0-9_-] names its
// lease as it is; any other is hashed; the longest fit.
func TestLimitKeyLeaseNames(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"cust-42_A", "queuey.lease.key.orders.cust-42_A"},
		{strings.Repeat("k", 64), "queuey.lease.key.orders." + strings.Repeat("k", 64)},
		// sha256 of each, first 16 bytes in hex.
		{"", "queuey.lease.key.orders.x.e3b0c44298fc1c149afbf4c8996fb924"},
		{"a/b", "queuey.lease.key.orders.x.c14cddc033f64b9dea80ea675cf280a0"},
		{strings.Repeat("k", 65), ""},
	} {
		got := rabbitmq.KeyLeaseQueue("orders", tc.key)
		if !strings.HasPrefix(got, rabbitmq.KeyLeaseQueuePrefix("orders")) {
			t.Errorf("key %q: %q does not start with %q", tc.key, got, rabbitmq.KeyLeaseQueuePrefix("orders"))
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("key %q: lease queue %q, want %q", tc.key, got, tc.want)
		}
		if tc.want == "" && !strings.HasPrefix(got, "queuey.lease.key.orders.x.") {
			t.Errorf("key %q: lease queue %q, want a hashed name", tc.key, got)
		}
	}
	long := rabbitmq.KeyLeaseQueue(strings.Repeat("q", runtime.MaxKeyedQueueNameLen), strings.Repeat("k", runtime.LimitKeyMaxLen))
	if len(long) > 255 {
		t.Fatalf("longest key lease queue is %d bytes, want at most 255", len(long))
	}
}
