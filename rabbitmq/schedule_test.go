package rabbitmq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// firing is one tick job as the test's handler saw it.
type firing struct {
	ID  string
	PID int
	At  time.Time // when the handler ran
}

// tickTime reads the tick time out of a tick job ID.
func tickTime(t *testing.T, id string) time.Time {
	t.Helper()
	_, ts, ok := strings.Cut(id, "@")
	tt, err := time.Parse(time.RFC3339, ts)
	if !ok || err != nil {
		t.Fatalf("tick job ID %q is not <schedule>@<RFC 3339 time>", id)
	}
	return tt
}

// TestScheduleAcrossProcesses runs one "@every 1s" schedule in three worker
// processes. For ten seconds exactly one of them fires each tick: ten
// ticks, one second apart, each once. Killed with SIGKILL, the firing
// process's lease goes to another within seconds, and the ticks go on from
// there. Restarted from nothing, a process does not fire a tick that was
// fired before.
func TestScheduleAcrossProcesses(t *testing.T) {
	requireBroker(t)
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = "rabbitmq_test.tick"
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	sched := runtime.Schedule{Name: "queuey-rmq-test.every1s." + hex.EncodeToString(buf[:]), Spec: "@every 1s"}
	t.Cleanup(func() {
		ch := rawChannel(t)
		_, _ = ch.QueueDelete(rabbitmq.LeaseQueue("schedule."+sched.Name), false, false, false)
	})

	fired := make(chan firing, 1000)
	runWorker(t, b, q, func(ctx context.Context, j tick) error {
		info, _ := runtime.InfoFromContext(ctx)
		fired <- firing{ID: info.ID, PID: j.PID, At: time.Now()}
		return nil
	})
	cfg := childConfig{Queue: q, Schedule: &sched}
	children := map[int]*child{}
	var mu sync.Mutex
	for range 3 {
		c := startChild(t, cfg)
		mu.Lock()
		children[c.pid()] = c
		mu.Unlock()
	}

	// Ten seconds of ticks from the first.
	first := within(t, fired, "the first tick")
	seen := map[string]int{first.ID: 1}
	steady := []firing{first}
	end := time.After(time.Until(tickTime(t, first.ID).Add(9500 * time.Millisecond)))
collect:
	for {
		select {
		case f := <-fired:
			seen[f.ID]++
			steady = append(steady, f)
		case <-end:
			break collect
		case <-time.After(wait):
			t.Fatal("no tick for", wait)
		}
	}
	if n := len(steady); n < 9 || n > 11 {
		t.Errorf("%d ticks in ten seconds, want 10±1: %v", n, steady)
	}
	for i, f := range steady {
		if seen[f.ID] != 1 {
			t.Errorf("tick %s fired %d times, want once", f.ID, seen[f.ID])
		}
		if i > 0 {
			if d := tickTime(t, f.ID).Sub(tickTime(t, steady[i-1].ID)); d != time.Second {
				t.Errorf("tick %s is %v after the one before, want 1s", f.ID, d)
			}
		}
		if _, ok := children[f.PID]; !ok {
			t.Errorf("tick %s fired by pid %d, not one of the worker processes", f.ID, f.PID)
		}
	}
	t.Logf("steady: %d ticks, first %s", len(steady), first.ID)

	// Kill the firing process; another takes over.
	leader := steady[len(steady)-1].PID
	lastBefore := tickTime(t, steady[len(steady)-1].ID)
	children[leader].kill(t)
	killedAt := time.Now()
	var after firing
	for {
		f := within(t, fired, "a tick after the kill")
		seen[f.ID]++
		if f.PID != leader {
			after = f
			break
		}
	}
	gap := after.At.Sub(killedAt)
	t.Logf("after SIGKILL of pid %d: tick %s from pid %d, %v later", leader, after.ID, after.PID, gap.Round(time.Millisecond))
	if gap > 5*time.Second {
		t.Errorf("first tick after the kill came %v later, want within a few seconds (5s)", gap)
	}
	if !tickTime(t, after.ID).After(lastBefore) {
		t.Errorf("first tick after the kill is %s, want one after the last before it (%s)", after.ID, lastBefore.Format(time.RFC3339))
	}
	for id, n := range seen {
		// A tick fired twice is possible only when the firing process
		// died between enqueueing it and recording it: its last tick.
		if n > 1 && !tickTime(t, id).Equal(lastBefore) {
			t.Errorf("tick %s fired %d times, want once", id, n)
		}
	}

	// Stop every process, then start one from nothing: past ticks stay
	// past.
	for pid, c := range children {
		if pid != leader {
			c.stop(t)
		}
	}
	var lastFired time.Time
	for {
		select {
		case f := <-fired:
			seen[f.ID]++
			if tt := tickTime(t, f.ID); tt.After(lastFired) {
				lastFired = tt
			}
			continue
		default:
		}
		break
	}
	for id := range seen {
		if tt := tickTime(t, id); tt.After(lastFired) {
			lastFired = tt
		}
	}
	restarted := startChild(t, cfg)
	for range 2 {
		f := within(t, fired, "a tick of the restarted process")
		if f.PID != restarted.pid() {
			t.Fatalf("tick %s from pid %d, want the restarted process %d", f.ID, f.PID, restarted.pid())
		}
		if seen[f.ID] > 0 || !tickTime(t, f.ID).After(lastFired) {
			ids := make([]string, 0, len(seen))
			for id := range seen {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			t.Fatalf("restarted process fired %s, at or before the last tick fired before (%s): %v", f.ID, lastFired.Format(time.RFC3339), ids)
		}
		seen[f.ID]++
	}
	restarted.stop(t)
}
