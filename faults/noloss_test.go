package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// fault is one disruption and when it happened.
type fault struct {
	kind       string
	start, end time.Time
}

// Fault kinds.
const (
	kindClose   = "close_all_connections"
	kindRestart = "stop_app/start_app"
	kindKill    = "kill -9 worker"
)

// TestNoLossUnderFaults: 10,000 jobs or more through two worker processes while
// the broker closes every connection 10 times, restarts its app twice and
// a worker is killed mid-job and replaced. Every confirmed job is handled
// or dead-lettered, none is lost, duplicates stay within prefetch × workers
// per fault, nothing is left over, and each surviving worker handles a job
// again soon after each fault ends. It prints the figures.
func TestNoLossUnderFaults(t *testing.T) {
	url := gate(t)
	restoreBroker(t)
	const (
		total    = 10000
		prefetch = 10
		workers  = 2
	)
	q := testQueue(t, url)
	q.Prefetch, q.Concurrency = prefetch, prefetch
	b, p := producer(t, url, q)
	ctx := context.Background()
	cfg := workerConfig{URL: url, Queue: q, Work: 50 * time.Millisecond, Shutdown: 5 * time.Second}
	w1, w2 := startWorker(t, "w1", cfg), startWorker(t, "w2", cfg)
	all := []*workerProc{w1, w2}

	// The producer enqueues at about half the pace the workers handle, so
	// that faults hit publishing and consuming alike, and it goes on past
	// total until the last fault is over, so that there are always jobs to
	// show a worker is back; a failed enqueue is tried again with the same
	// ID until it is confirmed.
	var (
		mu        sync.Mutex
		confirmed = map[string]bool{}
		confirms  []time.Time
		failed    int
		faulting  atomic.Bool
	)
	faulting.Store(true)
	var prod sync.WaitGroup
	next := make(chan int)
	go func() {
		defer close(next)
		tick := time.NewTicker(5 * time.Millisecond) // 200 jobs/s
		defer tick.Stop()
		for i := 0; i < total || faulting.Load(); i++ {
			<-tick.C
			next <- i
		}
	}()
	for range 8 {
		prod.Go(func() {
			for i := range next {
				id := fmt.Sprintf("faults-%06d", i)
				deadline := time.Now().Add(wait)
				for {
					ectx, cancel := context.WithTimeout(ctx, 5*time.Second)
					_, err := runtime.Enqueue(ectx, p, q, job{N: i}, runtime.WithID(id))
					cancel()
					if err == nil {
						break
					}
					mu.Lock()
					failed++
					mu.Unlock()
					if time.Now().After(deadline) {
						t.Errorf("job %s not enqueued within %v: %v", id, wait, err)
						return
					}
					time.Sleep(50 * time.Millisecond) // the producer's own retry pause
				}
				mu.Lock()
				confirmed[id] = true
				confirms = append(confirms, time.Now())
				mu.Unlock()
			}
		})
	}

	eventually(t, "both workers handle jobs", func() bool {
		return len(w1.entries()) > 0 && len(w2.entries()) > 0
	})
	plan := []string{kindClose, kindClose, kindClose, kindRestart, kindClose, kindClose, kindClose,
		kindKill, kindClose, kindClose, kindRestart, kindClose, kindClose}
	var (
		faults     []fault
		recoveries = map[string][]time.Duration{} // per kind: fault end to a surviving worker's next job
		pubRecov   = map[string][]time.Duration{} // per kind: fault end to the next confirmed enqueue
		freshFirst time.Duration
	)
	live := []*workerProc{w1, w2}
	var victim *workerProc
	for _, kind := range plan {
		f := fault{kind: kind, start: time.Now()}
		switch kind {
		case kindClose:
			rabbitmqctl(t, "close_all_connections", "queuey fault suite")
		case kindRestart:
			rabbitmqctl(t, "stop_app")
			rabbitmqctl(t, "start_app")
		case kindKill:
			victim = live[0]
			victim.kill()
			f.end = time.Now()
			fresh := startWorker(t, "w3", cfg)
			all = append(all, fresh)
			live = []*workerProc{live[1]}
			eventually(t, "the fresh worker handles a job", func() bool { _, ok := handledAfter(fresh, f.end); return ok })
			at, _ := handledAfter(fresh, f.end)
			freshFirst = at.Sub(f.end)
			live = append(live, fresh)
		}
		if f.end.IsZero() {
			f.end = time.Now()
		}
		faults = append(faults, f)
		for _, w := range live {
			eventually(t, fmt.Sprintf("worker %s handles a job after %s", w.name, kind), func() bool {
				_, ok := handledAfter(w, f.end)
				return ok
			}, w)
			at, _ := handledAfter(w, f.end)
			recoveries[kind] = append(recoveries[kind], max(0, at.Sub(f.end)))
		}
		mu.Lock()
		for _, c := range confirms {
			if c.After(f.end) {
				pubRecov[kind] = append(pubRecov[kind], c.Sub(f.end))
				break
			}
		}
		mu.Unlock()
	}
	faulting.Store(false)
	prod.Wait()

	// Every confirmed job ends handled or dead-lettered.
	var dead []admin.DeadLetterInfo
	handled := map[string]int{}
	eventually(t, "every confirmed job is handled or dead-lettered", func() bool {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		dead = append(dead, takeDeadLetters(tctx, b, q.Name)...)
		cancel()
		clear(handled)
		for _, e := range byTime(all...) {
			handled[e.id]++
		}
		return lostOf(confirmed, handled, dead) == 0
	})
	for _, w := range all {
		w.stop(t)
	}
	for _, w := range all {
		if w.err != nil && w != victim {
			t.Errorf("worker %s: %v\n%s", w.name, w.err, w.logTail())
		}
	}

	entries := byTime(all...)
	dups := duplicates(entries, faults)
	totalDups := 0
	for _, n := range dups {
		totalDups += n
	}
	extra := 0
	for id := range handled {
		if !confirmed[id] {
			extra++
		}
	}
	lost := lostOf(confirmed, handled, dead)
	left, leftDead := depth(t, url, q.Name), depth(t, url, q.Name+".dead")

	var out strings.Builder
	fmt.Fprintf(&out, "fault suite: %d jobs confirmed, %d handler runs, %d dead-lettered, %d enqueue attempts failed and were tried again\n",
		len(confirmed), len(entries), len(dead), failed)
	fmt.Fprintf(&out, "lost: %d\n", lost)
	fmt.Fprintf(&out, "handled but never confirmed: %d\n", extra)
	fmt.Fprintf(&out, "leftover depth: %s %d, %s.dead %d\n", q.Name, left, q.Name, leftDead)
	for _, kind := range []string{kindClose, kindRestart, kindKill, "none"} {
		n := count(faults, kind)
		fmt.Fprintf(&out, "duplicates after %-22s %3d (%d faults, bound %d)\n", kind+":", dups[kind], n, prefetch*workers*n)
	}
	for _, kind := range []string{kindClose, kindRestart, kindKill} {
		fmt.Fprintf(&out, "longest fault end to a surviving worker's next job, %-22s %v (all: %v)\n", kind+":", longest(recoveries[kind]), round(recoveries[kind]))
		if len(pubRecov[kind]) > 0 {
			fmt.Fprintf(&out, "longest fault end to the next confirmed enqueue,   %-22s %v\n", kind+":", longest(pubRecov[kind]))
		}
	}
	fmt.Fprintf(&out, "fresh worker after the kill: first job %v after the kill\n", freshFirst.Round(time.Millisecond))
	fmt.Print(out.String())

	if lost != 0 {
		t.Errorf("%d confirmed jobs lost", lost)
	}
	if extra != 0 {
		t.Errorf("%d jobs handled that were never enqueued", extra)
	}
	if left != 0 || leftDead != 0 {
		t.Errorf("leftover depths %d and %d, want 0", left, leftDead)
	}
	if dups["none"] != 0 {
		t.Errorf("%d duplicates before any fault", dups["none"])
	}
	if bound := prefetch * workers * len(faults); totalDups > bound {
		t.Errorf("%d duplicates over %d faults, want at most prefetch × workers per fault (%d)", totalDups, len(faults), bound)
	}
	for kind, rs := range recoveries {
		if l := longest(rs); l > recoveryBound {
			t.Errorf("after %s a surviving worker took %v to handle a job again, want at most %v", kind, l, recoveryBound)
		}
	}
}

// recoveryBound is the longest a surviving worker may take, from a fault's
// end, to handle a job again. The aim is about a second; this bound only
// catches a worker that stays idle in a backoff.
const recoveryBound = 5 * time.Second

// takeDeadLetters reads up to 1,000 dead letters of queue and purges those
// it read, so that the next call reads the ones after them; it returns none
// on an error, and letters it could not purge are read again.
func takeDeadLetters(ctx context.Context, b *rabbitmq.Backend, queue string) []admin.DeadLetterInfo {
	list, err := b.DeadLetters(ctx, queue, admin.DeadLetterPage{Limit: 1000})
	if err != nil || len(list.Letters) == 0 {
		return nil
	}
	if _, err := b.PurgeDeadLetters(ctx, queue, admin.DeadLetterSelector{IDs: list.IDs()}); err != nil {
		return nil
	}
	return list.Letters
}

// lostOf counts confirmed jobs neither handled nor dead-lettered.
func lostOf(confirmed map[string]bool, handled map[string]int, dead []admin.DeadLetterInfo) int {
	deadIDs := map[string]bool{}
	for _, d := range dead {
		if !d.Poison {
			deadIDs[d.ID] = true
		}
	}
	lost := 0
	for id := range confirmed {
		if handled[id] == 0 && !deadIDs[id] {
			lost++
		}
	}
	return lost
}

// duplicates counts the handler runs of a job after its first, each
// charged to the last fault that began before it ran ("none" before any).
func duplicates(entries []entry, faults []fault) map[string]int {
	seen := map[string]bool{}
	out := map[string]int{}
	for _, e := range entries {
		if !seen[e.id] {
			seen[e.id] = true
			continue
		}
		kind := "none"
		for _, f := range faults {
			if !f.start.After(e.at) {
				kind = f.kind
			}
		}
		out[kind]++
	}
	return out
}

func count(faults []fault, kind string) int {
	n := 0
	for _, f := range faults {
		if f.kind == kind {
			n++
		}
	}
	return n
}

func longest(ds []time.Duration) time.Duration {
	var l time.Duration
	for _, d := range ds {
		l = max(l, d)
	}
	return l.Round(time.Millisecond)
}

func round(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
