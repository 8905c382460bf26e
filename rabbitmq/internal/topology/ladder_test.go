package topology_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

func TestLadderWait(t *testing.T) {
	t.Parallel()
	l := topology.NewLadder(runtime.QueueQuorum, time.Second, topology.Version{})
	if l.Levels != 22 {
		t.Fatalf("Levels = %d, want 22 at 1s", l.Levels)
	}
	ex, key, err := l.Wait("orders.v2", 90*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := "0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.1.1.0.1.0.orders.v2"; key != want {
		t.Errorf("key = %q, want %q", key, want)
	}
	if want := "queuey.ladder.quorum.1000ms.06"; ex != want {
		t.Errorf("exchange = %q, want %q", ex, want)
	}
	if q, ok := l.KeyQueue(key); !ok || q != "orders.v2" {
		t.Errorf("KeyQueue = %q, %v", q, ok)
	}
	// Rounded up to the granularity, at least one.
	if ex, key, _ := l.Wait("q", 1500*time.Millisecond, 0); ex != l.Level(1) || !strings.HasSuffix(key, ".1.0.q") {
		t.Errorf("1.5s: %s %s, want level 1 and 2 granularities", ex, key)
	}
	if ex, key, _ := l.Wait("q", 0, 0); ex != l.Level(0) || !strings.HasSuffix(key, ".0.1.q") {
		t.Errorf("0: %s %s, want level 0 and 1 granularity", ex, key)
	}
	if _, _, err := l.Wait("q", runtime.MaxDeferral+time.Second, 0); !errors.Is(err, runtime.ErrDelayTooLong) {
		t.Errorf("too long: %v, want ErrDelayTooLong", err)
	}
	longest := runtime.MaxDeferral / time.Second * time.Second
	if ex, key, err := l.Wait("q", longest, 0); err != nil || ex != l.Level(21) || len(key) != l.KeyLen("q") {
		t.Errorf("longest: %s %q %v", ex, key, err)
	}
}

func TestLadderTopology(t *testing.T) {
	t.Parallel()
	l := topology.NewLadder(runtime.QueueQuorum, time.Second, topology.Version{})
	q := l.LevelQueue(0, topology.Version{Major: 3})
	if q.Args[topology.ArgDeadLetterExchange] != l.Deliver() || q.Args[topology.ArgMessageTTL] != int32(1000) ||
		q.Args[topology.ArgDeadLetterStrategy] != topology.AtLeastOnce || q.Args[topology.ArgOverflow] != topology.RejectPublish {
		t.Errorf("level 0 = %v", q.Args)
	}
	for _, arg := range []string{topology.ArgDeadLetterRoutingKey, topology.ArgExpires, topology.ArgDeliveryLimit} {
		if _, ok := q.Args[arg]; ok {
			t.Errorf("level 0 on 3.x has %s", arg)
		}
	}
	top := l.LevelQueue(21, topology.Version{Major: 4})
	if top.Args[topology.ArgDeadLetterExchange] != l.Level(20) || top.Args[topology.ArgMessageTTL] != int32(1<<21*1000) || top.Args[topology.ArgDeliveryLimit] != int32(-1) {
		t.Errorf("level 21 on 4.x = %v", top.Args)
	}
	c := topology.NewLadder(runtime.QueueClassic, 100*time.Millisecond, topology.Version{}).LevelQueue(3, topology.Version{Major: 4})
	if _, ok := c.Args[topology.ArgDeadLetterStrategy]; ok || c.Args[topology.ArgQueueType] != "classic" || c.Args[topology.ArgMessageTTL] != int32(800) {
		t.Errorf("classic level 3 = %v", c.Args)
	}
	bs := l.Bindings()
	if len(bs) != 2*l.Levels+1 {
		t.Fatalf("%d bindings, want %d", len(bs), 2*l.Levels+1)
	}
	if b := bs[len(bs)-2]; b.Source != l.Level(21) || b.Dest != l.Level(21) || b.Key != "1.#" || b.ToExchange {
		t.Errorf("level 21's queue binding = %+v", b)
	}
	if b := bs[2]; b.Source != l.Level(0) || b.Dest != l.Deliver() || b.Key != strings.Repeat("*.", 21)+"0.#" || !b.ToExchange {
		t.Errorf("level 0's down binding = %+v", b)
	}
	if b := l.QueueBinding("a.b"); b.Key != strings.Repeat("*.", 22)+"a.b" || b.Source != l.Deliver() {
		t.Errorf("queue binding = %+v", b)
	}
}

// TestLadderSplit: a quorum ladder on 4.x holds waits of high priority in
// level queues of their own, reached by set bits written "h"; one of 3.x,
// and every classic one, has no such queues and writes every set bit "1".
func TestLadderSplit(t *testing.T) {
	t.Parallel()
	v4, v3 := topology.Version{Major: 4}, topology.Version{Major: 3, Minor: 10}
	l := topology.NewLadder(runtime.QueueQuorum, time.Second, v4)
	if !l.Split {
		t.Fatal("quorum ladder on 4.x is not split")
	}
	for _, c := range []struct {
		prio uint8
		want string
	}{{0, "0.1.0.1.1.0.1.0.orders.v2"}, {4, "0.1.0.1.1.0.1.0.orders.v2"}, {5, "0.h.0.h.h.0.h.0.orders.v2"}, {255, "0.h.0.h.h.0.h.0.orders.v2"}} {
		ex, key, err := l.Wait("orders.v2", 90*time.Second, c.prio)
		if err != nil || ex != l.Level(6) || !strings.HasSuffix(key, "."+c.want) || len(key) != l.KeyLen("orders.v2") {
			t.Errorf("priority %d: %s %q %v, want level 6 and a key ending %q", c.prio, ex, key, err, c.want)
		}
		if q, ok := l.KeyQueue(key); !ok || q != "orders.v2" {
			t.Errorf("priority %d: KeyQueue = %q, %v", c.prio, q, ok)
		}
	}
	qs := l.Queues(v4)
	if len(qs) != 2*l.Levels+1 {
		t.Fatalf("%d queues, want %d", len(qs), 2*l.Levels+1)
	}
	// The unrouted queue comes last: a producer takes it to mean that every
	// level queue, P.00.hi included, is declared (docs/wire-format.md).
	if last := qs[len(qs)-1]; last.Name != l.Unrouted() {
		t.Errorf("last queue declared = %q, want the unrouted one, %q", last.Name, l.Unrouted())
	}
	if hi := qs[1]; hi.Name != l.HighLevel(0) || hi.Name != l.Level(0)+".hi" || hi.Args[topology.ArgMessageTTL] != int32(1000) || hi.Args[topology.ArgDeadLetterExchange] != l.Deliver() {
		t.Errorf("level 0's high queue = %+v", hi)
	}
	bs := l.Bindings()
	if len(bs) != 3*l.Levels+1 {
		t.Fatalf("%d bindings, want %d", len(bs), 3*l.Levels+1)
	}
	if b := bs[len(bs)-1]; b.Source != l.Level(21) || b.Dest != l.HighLevel(21) || b.Key != "h.#" || b.ToExchange {
		t.Errorf("level 21's high queue binding = %+v", b)
	}
	for _, o := range []topology.Ladder{topology.NewLadder(runtime.QueueQuorum, time.Second, v3), topology.NewLadder(runtime.QueueClassic, time.Second, v4)} {
		if o.Split || len(o.Queues(v4)) != o.Levels+1 || len(o.Bindings()) != 2*o.Levels+1 {
			t.Errorf("%s ladder: split %v, %d queues, %d bindings", o.Type, o.Split, len(o.Queues(v4)), len(o.Bindings()))
		}
		if _, key, _ := o.Wait("q", 3*time.Second, 9); !strings.HasSuffix(key, ".1.1.q") {
			t.Errorf("%s ladder: priority 9 key %q, want its set bits 1", o.Type, key)
		}
	}
}

// TestLadderEnter: a wait enters through the enter exchange into the level
// queue of its highest set bit, with Wait's key, and a BCC key that binds
// that queue alone. The enter keys are single words that no binding of
// the levels or of Deliver matches, so that, kept among a wait's routing
// keys when it is dead-lettered, they route it nowhere.
func TestLadderEnter(t *testing.T) {
	t.Parallel()
	v4 := topology.Version{Major: 4}
	for _, l := range []topology.Ladder{
		topology.NewLadder(runtime.QueueClassic, time.Second, v4),
		topology.NewLadder(runtime.QueueQuorum, time.Second, v4),
		topology.NewLadder(runtime.QueueQuorum, time.Millisecond, v4),
		topology.NewLadder(runtime.QueueClassic, 24*time.Hour, v4),
	} {
		bound := map[string]string{} // enter key -> queue
		for _, b := range l.EnterBindings() {
			if b.Source != l.EnterExchange() || b.ToExchange {
				t.Errorf("%s: enter binding %+v", l.Prefix(), b)
			}
			if q, dup := bound[b.Key]; dup {
				t.Errorf("%s: enter key %q binds %q and %q", l.Prefix(), b.Key, q, b.Dest)
			}
			bound[b.Key] = b.Dest
			if strings.Contains(b.Key, ".") || b.Key == "0" || b.Key == "1" || b.Key == "h" {
				t.Errorf("%s: enter key %q is not one word other than 0, 1 and h", l.Prefix(), b.Key)
			}
		}
		levelQueues := len(l.Queues(v4)) - 1 // all but the unrouted one
		if len(bound) != levelQueues {
			t.Errorf("%s: %d enter bindings, want one per level queue (%d)", l.Prefix(), len(bound), levelQueues)
		}
		// Every other binding needs at least two words.
		for _, b := range append(l.Bindings(), l.QueueBinding("q")) {
			if b.Source != l.Unrouted() && !strings.Contains(b.Key, ".") {
				t.Errorf("%s: binding %+v matches one-word keys", l.Prefix(), b)
			}
		}
		if xs := l.Exchanges(); xs[len(xs)-1].Name != l.EnterExchange() || xs[len(xs)-1].Kind != "direct" {
			t.Errorf("%s: last exchange %+v, want the direct enter exchange", l.Prefix(), xs[len(xs)-1])
		}
		for _, prio := range []uint8{0, 9} {
			for _, d := range []time.Duration{0, 5 * l.Granularity, 4 * l.Granularity, l.Granularity << (l.Levels - 1)} {
				e, err := l.Enter("orders.v2", d, prio)
				if err != nil {
					t.Fatal(err)
				}
				ex, key, err := l.Wait("orders.v2", d, prio)
				if err != nil || ex != l.Level(e.Level) || key != e.Key {
					t.Errorf("%s %v priority %d: Enter %+v, Wait %s %q %v", l.Prefix(), d, prio, e, ex, key, err)
				}
				if bound[e.BCC] != e.Queue {
					t.Errorf("%s %v priority %d: BCC %q binds %q, want %q", l.Prefix(), d, prio, e.BCC, bound[e.BCC], e.Queue)
				}
				high := l.Split && prio >= topology.HighPriority
				if want := l.Level(e.Level); high {
					if e.Queue != l.HighLevel(e.Level) {
						t.Errorf("%s %v priority %d: queue %q, want the high one of level %d", l.Prefix(), d, prio, e.Queue, e.Level)
					}
				} else if e.Queue != want {
					t.Errorf("%s %v priority %d: queue %q, want %q", l.Prefix(), d, prio, e.Queue, want)
				}
			}
		}
	}
}
