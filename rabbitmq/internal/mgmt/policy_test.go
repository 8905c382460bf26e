package mgmt_test

import (
	"testing"

	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
)

func TestDeliveryLimit(t *testing.T) {
	limit := func(name, pattern, applyTo string, prio int, v float64) mgmt.Policy {
		return mgmt.Policy{Name: name, Pattern: pattern, ApplyTo: applyTo, Priority: prio, Definition: map[string]any{"delivery-limit": v}}
	}
	other := mgmt.Policy{Name: "ha", Pattern: ".*", ApplyTo: "all", Priority: 5, Definition: map[string]any{"max-length": float64(10)}}
	for _, tc := range []struct {
		what       string
		policy, op []mgmt.Policy
		queue, typ string
		want       int
		from       string
		ok         bool
	}{
		{"none", nil, nil, "q", "quorum", 0, "", false},
		{"a policy", []mgmt.Policy{limit("five", "^q$", "queues", 0, 5)}, nil, "q", "quorum", 5, "five", true},
		{"pattern not matching", []mgmt.Policy{limit("five", "^q$", "queues", 0, 5)}, nil, "q.dead", "quorum", 0, "", false},
		{"for classic queues only", []mgmt.Policy{limit("five", "^q", "classic_queues", 0, 5)}, nil, "q", "quorum", 0, "", false},
		{"for quorum queues", []mgmt.Policy{limit("five", "^q", "quorum_queues", 0, 5)}, nil, "q", "quorum", 5, "five", true},
		{"for exchanges", []mgmt.Policy{limit("five", "^q", "exchanges", 0, 5)}, nil, "q", "quorum", 0, "", false},
		{"the highest priority applies, without a limit", []mgmt.Policy{limit("five", "^q", "all", 0, 5), other}, nil, "q", "quorum", 0, "", false},
		{"the highest priority applies, with one", []mgmt.Policy{other, limit("nine", "^q", "all", 9, 9)}, nil, "q", "quorum", 9, "nine", true},
		{"-1 sets none", []mgmt.Policy{limit("off", ".*", "all", 0, -1)}, nil, "q", "quorum", 0, "", false},
		{"the lower of policy and operator policy", []mgmt.Policy{limit("five", ".*", "all", 0, 5)}, []mgmt.Policy{limit("op", ".*", "queues", 0, 3)}, "q", "quorum", 3, "op", true},
		{"an operator policy alone", nil, []mgmt.Policy{limit("op", ".*", "queues", 0, 30)}, "q", "quorum", 30, "op", true},
		{"a pattern Go cannot read", []mgmt.Policy{limit("bad", "^q(?!x)", "all", 0, 5)}, nil, "q", "quorum", 0, "", false},
	} {
		got, from, ok := mgmt.DeliveryLimit(tc.policy, tc.op, tc.queue, tc.typ)
		if got != tc.want || from != tc.from || ok != tc.ok {
			t.Errorf("%s: DeliveryLimit = %d, %q, %v; want %d, %q, %v", tc.what, got, from, ok, tc.want, tc.from, tc.ok)
		}
	}
}
