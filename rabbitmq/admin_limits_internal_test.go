package rabbitmq

import (
	"strings"
	"testing"

	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
)

// TestKeyQueueOf: a key lease queue is counted for the queue its name
// gives by length and name, whatever dots either holds; a name whose key
// keyLeaseName never makes is no key's.
func TestKeyQueueOf(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 2)
	for _, c := range []struct {
		name string
		want string // "" for none
	}{
		{"queuey.lease.key.6.orders.customer-7", "orders"},
		{"queuey.lease.key.3.a.b.c", "a.b"},
		{"queuey.lease.key.1.a.b.c", ""}, // "b.c" is no key
		{"queuey.lease.key.6.orders.x." + hex, "orders"},
		{"queuey.lease.key.8.orders.x." + hex, "orders.x"},
		{"queuey.lease.key.6.orders.x." + strings.ToUpper(hex), ""},
		{"queuey.lease.key.6.orders." + strings.Repeat("k", 61), ""},
		{"queuey.lease.key.6.orders", ""},
		{"queuey.lease.key.06.orders.k", ""},
		{"queuey.lease.key.7.orders.k", ""},
		{"queuey.lease.schedule.nightly", ""},
	} {
		l := newLimitListing([]mgmt.Queue{{Name: c.name}}, nil)
		got, ok := l.keyQueueOf(c.name)
		if !ok {
			got = ""
		}
		if got != c.want {
			t.Errorf("keyQueueOf(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
