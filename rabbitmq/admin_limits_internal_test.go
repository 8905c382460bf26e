package rabbitmq

import (
	"strings"
	"testing"

	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
)

// TestKeyQueueOf: a key lease queue is counted for the queue whose name
// it starts with: "<q>.x.<32 hex digits>" is q's hashed key, unless only
// "<q>.x" (whose plain key of 32 hex digits is named the same) is on the
// broker; a name whose key keyLeaseName never makes is no key's.
func TestKeyQueueOf(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 2)
	for _, c := range []struct {
		name   string
		queues []string // besides the lease queue
		want   string   // "" for none
	}{
		{"queuey.lease.key.orders.customer-7", nil, "orders"},
		{"queuey.lease.key.a.b.c", nil, "a.b"},
		{"queuey.lease.key.orders.x." + hex, nil, "orders"},
		{"queuey.lease.key.orders.x." + hex, []string{"orders"}, "orders"},
		{"queuey.lease.key.orders.x." + hex, []string{"orders", "orders.x"}, "orders"},
		{"queuey.lease.key.orders.x." + hex, []string{"orders.x"}, "orders.x"},
		{"queuey.lease.key.orders.x." + strings.ToUpper(hex), nil, "orders.x"},
		{"queuey.lease.key.orders." + strings.Repeat("k", 65), nil, ""},
		{"queuey.lease.key.orders", nil, ""},
		{"queuey.lease.schedule.nightly", nil, ""},
	} {
		qs := []mgmt.Queue{{Name: c.name}}
		for _, q := range c.queues {
			qs = append(qs, mgmt.Queue{Name: q})
		}
		l := newLimitListing(qs, nil)
		got, ok := l.keyQueueOf(c.name)
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("keyQueueOf(%q) with queues %q = %q, want %q", c.name, c.queues, got, c.want)
		}
	}
}
