package rabbitmq_test

import (
	"strings"
	"testing"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestLimitQueueNames: the limits' queues are named as the admin API and
// every worker expect, and the longest fit an AMQP short string.
func TestLimitQueueNames(t *testing.T) {
	limitToken, limitLedger, rateToken, rateLedger, all := rabbitmq.LimitQueues("orders")
	want := []string{
		"queuey.limit.orders", "queuey.limit-ledger.orders", "queuey.limit-lock.orders",
		"queuey.rate.orders", "queuey.rate-ledger.orders", "queuey.rate-lock.orders",
		"queuey.rate-s.orders", "queuey.rate-m.orders", "queuey.rate-h.orders",
	}
	if strings.Join(all, " ") != strings.Join(want, " ") {
		t.Fatalf("limit queues = %q, want %q", all, want)
	}
	if limitToken != want[0] || limitLedger != want[1] || rateToken != want[3] || rateLedger != want[4] {
		t.Fatalf("names = %q %q %q %q", limitToken, limitLedger, rateToken, rateLedger)
	}
	if got := brokertest.LimitQueuesOf("orders").All(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("brokertest.LimitQueuesOf names %q, want %q as the backend does", got, want)
	}
	// No two queues' limits share a broker queue, whatever their names'
	// ends: "a.ledger" is a name of its own, never a part of "a"'s.
	seen := map[string]string{}
	for _, q := range []string{"a", "a.ledger", "a.lock", "a.s", "a.m", "a.h", "ledger.a", "s.a"} {
		_, _, _, _, names := rabbitmq.LimitQueues(q)
		for _, name := range names {
			if other, ok := seen[name]; ok {
				t.Errorf("queues %q and %q both name %q", other, q, name)
			}
			seen[name] = q
		}
	}
	_, _, _, _, all = rabbitmq.LimitQueues(strings.Repeat("q", runtime.MaxQueueNameLen))
	for _, name := range all {
		if len(name) > 255 {
			t.Errorf("%q is %d bytes, want at most 255", name, len(name))
		}
	}
}

// TestLimitKeyLeaseNames: a key of up to 60 of [A-Za-z0-9_-] names its
// lease as it is, after the queue's length and name; any other is hashed;
// the longest fit.
func TestLimitKeyLeaseNames(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"cust-42_A", "queuey.lease.key.6.orders.cust-42_A"},
		{strings.Repeat("k", 60), "queuey.lease.key.6.orders." + strings.Repeat("k", 60)},
		// sha256 of each, first 16 bytes in hex.
		{"", "queuey.lease.key.6.orders.x.e3b0c44298fc1c149afbf4c8996fb924"},
		{"a/b", "queuey.lease.key.6.orders.x.c14cddc033f64b9dea80ea675cf280a0"},
		{strings.Repeat("k", 61), ""},
	} {
		got := rabbitmq.KeyLeaseQueue("orders", tc.key)
		if !strings.HasPrefix(got, rabbitmq.KeyLeaseQueuePrefix("orders")) {
			t.Errorf("key %q: %q does not start with %q", tc.key, got, rabbitmq.KeyLeaseQueuePrefix("orders"))
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("key %q: lease queue %q, want %q", tc.key, got, tc.want)
		}
		if tc.want == "" && !strings.HasPrefix(got, "queuey.lease.key.6.orders.x.") {
			t.Errorf("key %q: lease queue %q, want a hashed name", tc.key, got)
		}
	}
	long := rabbitmq.KeyLeaseQueue(strings.Repeat("q", runtime.MaxKeyedQueueNameLen), strings.Repeat("k", runtime.LimitKeyMaxLen))
	if len(long) > 255 {
		t.Fatalf("longest key lease queue is %d bytes, want at most 255", len(long))
	}
}
