package topology

import (
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

func TestUnroutedLadder(t *testing.T) {
	v4 := Version{Major: 4}
	for _, l := range []Ladder{NewLadder(runtime.QueueClassic, time.Second, v4), NewLadder(runtime.QueueQuorum, 100*time.Millisecond, v4)} {
		got, ok := UnroutedLadder(l.Unrouted(), v4)
		if !ok || got != l {
			t.Errorf("UnroutedLadder(%q) = %+v, %v; want %+v", l.Unrouted(), got, ok, l)
		}
	}
	for _, name := range []string{
		"queuey.ladder.classic.1000ms.deliver", "queuey.ladder.stream.1000ms.unrouted",
		"queuey.ladder.classic.01000ms.unrouted", "queuey.ladder.classic.0ms.unrouted",
		"queuey.ladder.classic.1000.unrouted", "orders.unrouted", "queuey.ladder.classic.unrouted",
	} {
		if l, ok := UnroutedLadder(name, Version{Major: 3}); ok {
			t.Errorf("UnroutedLadder(%q) = %+v, want not a ladder", name, l)
		}
	}
}

func TestKeyDelay(t *testing.T) {
	l := NewLadder(runtime.QueueQuorum, time.Second, Version{Major: 4})
	for _, d := range []time.Duration{time.Second, 90 * time.Second, runtime.MaxDeferral.Truncate(time.Second)} {
		for _, priority := range []uint8{0, HighPriority} {
			_, key, err := l.Wait("a.b", d, priority)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := l.KeyDelay(key)
			if !ok || got != d {
				t.Errorf("KeyDelay(%q) = %v, %v; want %v", key, got, ok, d)
			}
		}
	}
	for _, key := range []string{"", "1.0", "2." + l.Unrouted(), "0,0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.q"} {
		if d, ok := l.KeyDelay(key); ok {
			t.Errorf("KeyDelay(%q) = %v, want not a ladder key", key, d)
		}
	}
}
