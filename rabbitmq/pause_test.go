package rabbitmq_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// start is one job start a worker process reported.
type start struct {
	pid   int
	queue string
	id    string
	at    time.Time
}

// collectStarts gathers the starts c reports into out until its output ends.
func collectStarts(c *child, out chan<- start) {
	for line := range c.lines {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "start" {
			continue
		}
		ns, _ := strconv.ParseInt(f[3], 10, 64)
		out <- start{pid: c.pid(), queue: f[1], id: f[2], at: time.Unix(0, ns)}
	}
}

// TestPauseAcrossProcesses pauses one of two queues that three worker
// processes consume under a steady stream of enqueues: from a second after
// the pause to the resume no job of it starts anywhere, while its enqueues
// succeed and the other queue goes on; a fourth process started while it is
// paused takes none of its jobs; after the resume every job is handled.
func TestPauseAcrossProcesses(t *testing.T) {
	requireBroker(t)
	b := dial(t, rabbitmq.Options{})
	paused := runtime.DefaultQueueConfig(queueName(t))
	other := runtime.DefaultQueueConfig(queueName(t))
	paused.Kind, other.Kind = "rabbitmq_test.tick", "rabbitmq_test.tick"
	p, err := runtime.NewProducer(ctxT(t), b, paused, other)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.ResumeQueue(context.Background(), paused.Name) })

	cfg := childConfig{Handle: []runtime.QueueConfig{paused, other}, Work: 20 * time.Millisecond}
	starts := make(chan start, 10000)
	var children []*child
	for range 3 {
		c := startChild(t, cfg)
		children = append(children, c)
		go collectStarts(c, starts)
	}

	// A steady stream onto both queues until stopped.
	var (
		mu       sync.Mutex
		enqueued = map[string]string{} // id -> queue
		enqErrs  []error
	)
	stopStream := make(chan struct{})
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		every := time.NewTicker(20 * time.Millisecond)
		defer every.Stop()
		for {
			select {
			case <-stopStream:
				return
			case <-every.C:
			}
			for _, q := range []runtime.QueueConfig{paused, other} {
				id, err := runtime.Enqueue(ctxT(t), p, q, tick{})
				mu.Lock()
				if err != nil {
					enqErrs = append(enqErrs, err)
				} else {
					enqueued[id] = q.Name
				}
				mu.Unlock()
			}
		}
	}()

	seen := map[string]start{}
	record := func(s start) {
		if _, dup := seen[s.id]; !dup {
			seen[s.id] = s
		}
	}
	// Running: both queues' jobs start.
	for got := map[string]bool{}; !got[paused.Name] || !got[other.Name]; {
		s := within(t, starts, "jobs of both queues to start")
		record(s)
		got[s.queue] = true
	}

	if err := b.PauseQueue(ctxT(t), paused.Name); err != nil {
		t.Fatalf("PauseQueue: %v", err)
	}
	pausedAt := time.Now()
	late := startChild(t, cfg) // started while paused
	go collectStarts(late, starts)
	resumeAt := time.After(time.Until(pausedAt.Add(3 * time.Second)))
	func() {
		for {
			select {
			case s := <-starts:
				record(s)
			case <-resumeAt:
				return
			}
		}
	}()
	if err := b.ResumeQueue(ctxT(t), paused.Name); err != nil {
		t.Fatalf("ResumeQueue: %v", err)
	}
	resumedAt := time.Now()
	// Starts before the resume reached the test keep coming for a moment;
	// each carries its own time.
	close(stopStream)
	<-streamDone

	mu.Lock()
	defer mu.Unlock()
	if len(enqErrs) > 0 {
		t.Fatalf("%d enqueues failed, want none (the first: %v)", len(enqErrs), enqErrs[0])
	}
	for len(seen) < len(enqueued) {
		record(within(t, starts, fmt.Sprintf("every job to start after the resume (%d of %d so far)", len(seen), len(enqueued))))
	}
	otherDuring, lateOther := 0, 0
	for _, s := range seen {
		during := s.at.After(pausedAt.Add(time.Second)) && s.at.Before(resumedAt)
		switch {
		case s.queue == paused.Name && during:
			t.Errorf("job %s of the paused queue started %v after the pause (pid %d), want none from 1s after it to the resume", s.id, s.at.Sub(pausedAt), s.pid)
		case s.queue == paused.Name && s.pid == late.pid() && s.at.Before(resumedAt):
			t.Errorf("the process started while the queue was paused ran job %s of it before the resume", s.id)
		case s.queue == other.Name && during:
			otherDuring++
			if s.pid == late.pid() {
				lateOther++
			}
		}
	}
	if otherDuring == 0 {
		t.Error("no job of the other queue started while one was paused, want it unaffected")
	}
	for id, q := range enqueued {
		if s, ok := seen[id]; !ok || s.queue != q {
			t.Errorf("job %s of %s not handled (seen %+v)", id, q, s)
		}
	}
	t.Logf("%d jobs enqueued, all handled; %d of the other queue started while paused, %d of them by the process started then", len(enqueued), otherDuring, lateOther)
	for _, c := range append(children, late) {
		c.stop(t)
	}
}
