package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// TestCrashLoopDeadLetters: a job whose handler exits its process is
// delivered max_attempts times, each time counted as an attempt, and then
// lands in the dead letters with a reason that says so, while 1,000 other
// jobs complete. Worker processes that die are started again, as a
// supervisor would.
func TestCrashLoopDeadLetters(t *testing.T) {
	url := gate(t)
	restoreBroker(t)
	const (
		others      = 1000
		maxAttempts = 3
	)
	q := testQueue(t, url)
	// One job in flight per worker: a crash sends back only the poison
	// pill, and no other job is charged an attempt for it.
	q.Prefetch, q.Concurrency, q.MaxAttempts = 1, 1, maxAttempts
	b, p := producer(t, url, q)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := runtime.Enqueue(ctx, p, q, job{Crash: true}, runtime.WithID("poison")); err != nil {
		t.Fatal(err)
	}
	jobs := make([]job, others)
	for i := range jobs {
		jobs[i].N = i
	}
	ids, err := runtime.EnqueueMany(ctx, p, q, jobs)
	if err != nil {
		t.Fatal(err)
	}
	cfg := workerConfig{URL: url, Queue: q, Work: time.Millisecond, Shutdown: 5 * time.Second}
	var procs []*workerProc
	live := []*workerProc{startWorker(t, "w0", cfg), startWorker(t, "w1", cfg)}
	procs = append(procs, live...)
	restarts := 0
	var dead []admin.DeadLetterInfo
	eventually(t, "the poison pill dead-lettered and the other jobs handled", func() bool {
		for i, w := range live {
			select {
			case <-w.exited: // crashed: a supervisor starts it again
				restarts++
				live[i] = startWorker(t, fmt.Sprintf("w%d", len(procs)), cfg)
				procs = append(procs, live[i])
			default:
			}
		}
		if list, err := b.DeadLetters(ctx, q.Name, admin.DeadLetterPage{Limit: 10}); err == nil {
			dead = list.Letters
		}
		handled := map[string]bool{}
		for _, e := range byTime(procs...) {
			handled[e.id] = true
		}
		for _, id := range ids {
			if !handled[id] {
				return false
			}
		}
		return len(dead) > 0
	}, live...)
	poisonRuns := 0
	for _, e := range byTime(procs...) {
		if e.id == "poison" {
			poisonRuns++
		}
	}
	fmt.Printf("crash loop: poison pill ran %d times (max_attempts %d), %d worker restarts, %d other jobs handled, dead letters: %d\n",
		poisonRuns, maxAttempts, restarts, others, len(dead))
	if len(dead) != 1 || dead[0].Poison || dead[0].ID != "poison" {
		t.Fatalf("dead letters %+v, want the poison pill alone", dead)
	}
	want := fmt.Sprintf("delivered %d times without being settled", maxAttempts)
	if !strings.Contains(dead[0].Reason, want) {
		t.Errorf("dead-letter reason %q, want it to say %q", dead[0].Reason, want)
	}
	if poisonRuns != maxAttempts {
		t.Errorf("the poison pill ran %d times, want max_attempts (%d)", poisonRuns, maxAttempts)
	}
}
