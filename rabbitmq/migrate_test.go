package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/mgmt"
	"github.com/queuey/queuey/runtime"
)

// brokerArgs reads queue's arguments through the management API.
func brokerArgs(t *testing.T, queue string) mgmt.Queue {
	t.Helper()
	c, err := mgmt.New(brokertest.ManagementURL(), "/")
	if err != nil {
		t.Fatal(err)
	}
	q, err := c.Queue(ctxT(t), queue)
	if err != nil {
		t.Fatalf("management API: queue %q: %v", queue, err)
	}
	return q
}

// handled counts the jobs a worker handled, by job number.
type handled struct {
	mu   sync.Mutex
	seen map[int]int
}

func (h *handled) add(n int) {
	h.mu.Lock()
	h.seen[n]++
	h.mu.Unlock()
}

func (h *handled) missing(want []int) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int
	for _, n := range want {
		if h.seen[n] == 0 {
			out = append(out, n)
		}
	}
	return out
}

// TestMigrateLosesNoJob migrates a classic queue holding 1,000 ready jobs,
// 100 waiting in hold queues and 10 dead letters, while a producer keeps
// enqueueing, to max_priority 8 and to a quorum queue: every job is
// handled once or more, the dead letters are all there, the arguments are
// the new ones, and a worker started mid-migration waits and then runs.
func TestMigrateLosesNoJob(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*runtime.QueueConfig)
		check  func(t *testing.T, work, dead mgmt.Queue)
	}{
		{"max_priority", func(q *runtime.QueueConfig) { q.MaxPriority = 8 }, func(t *testing.T, work, dead mgmt.Queue) {
			if got := work.Arguments["x-max-priority"]; got != float64(8) {
				t.Errorf("x-max-priority = %v, want 8", got)
			}
		}},
		{"quorum", func(q *runtime.QueueConfig) { q.QueueType = runtime.QueueQuorum }, func(t *testing.T, work, dead mgmt.Queue) {
			if work.Type != "quorum" || dead.Type != "quorum" {
				t.Errorf("types = %q and %q (dead), want quorum", work.Type, dead.Type)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := queueName(t, ".migrating", ".dead.migrating")
			old := runtime.DefaultQueueConfig(name)
			old.Kind = runtime.KindOf[job]()
			old.MaxPriority = 3
			neu := old
			tc.change(&neu)

			ctx := ctxT(t)
			b := dial(t, rabbitmq.Options{})
			p, err := runtime.NewProducer(ctx, b, old)
			if err != nil {
				t.Fatal(err)
			}
			var want []int
			jobs := make([]job, 1000)
			for i := range jobs {
				jobs[i] = job{N: i}
				want = append(want, i)
			}
			if _, err := runtime.EnqueueMany(ctx, p, old, jobs); err != nil {
				t.Fatal(err)
			}
			for i := 1000; i < 1100; i++ {
				// Spread over 5 hold queues, some expiring mid-migration.
				d := time.Duration(1+i%5) * time.Second
				if _, err := runtime.Enqueue(ctx, p, old, job{N: i}, runtime.WithDelay(d)); err != nil {
					t.Fatal(err)
				}
				want = append(want, i)
			}
			for i := range 10 {
				addDead(t, old, "dead-"+string(rune('a'+i)))
			}

			// A producer of another process enqueues all along.
			pb := dial(t, rabbitmq.Options{})
			pp, err := runtime.NewProducer(ctx, pb, old)
			if err != nil {
				t.Fatal(err)
			}
			var (
				stopProducing atomic.Bool
				produced      []int
				produceErr    error
				producing     sync.WaitGroup
			)
			// It runs while jobs move out, while the queue is sealed (its
			// publishes are nacked and go to the temporary queue), while
			// it is gone (they come back, and go there too) and while they
			// move back.
			producing.Add(1)
			go func() {
				defer producing.Done()
				for n := 100000; !stopProducing.Load(); n++ {
					_, err := runtime.Enqueue(ctx, pp, old, job{N: n})
					if err != nil {
						produceErr = err
						return
					}
					produced = append(produced, n)
					// A steady stream rather than a flood: the
					// migration's delete (only if empty) is retried
					// whenever a job came in just before it.
					select {
					case <-ctx.Done():
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()

			// A worker of the new config starts once the migration is
			// under way.
			logs := make(records, 1000)
			wb := dial(t, rabbitmq.Options{Logger: slog.New(logs)})
			h := &handled{seen: map[int]int{}}
			var started atomic.Bool
			startWorker := func() {
				if started.Swap(true) {
					return
				}
				runWorker(t, wb, neu, func(_ context.Context, j job) error { h.add(j.N); return nil })
			}
			mb := dial(t, rabbitmq.Options{})
			mctx, cancel := context.WithTimeout(context.Background(), 3*wait)
			defer cancel()
			res, err := mb.MigrateQueue(mctx, neu, admin.MigrateOptions{Progress: func(step string) {
				t.Log(step)
				if strings.HasPrefix(step, "move the messages of") && !strings.Contains(step, "back") {
					startWorker()
				}
			}})
			if err != nil {
				t.Fatalf("MigrateQueue: %v", err)
			}
			t.Logf("moved %d, dead %d, diffs %v", res.Moved, res.Dead, res.Diffs)
			// The producer goes on a little past the migration.
			n := len(want)
			eventually.True(t, wait, func() bool { return len(h.missing(want[:n])) < n }, "jobs handled after the migration")
			stopProducing.Store(true)
			producing.Wait()
			if produceErr != nil {
				t.Fatalf("an enqueue during the migration failed: %v", produceErr)
			}
			if len(produced) == 0 {
				t.Fatal("the producer enqueued nothing")
			}
			want = append(want, produced...)
			eventually.Nil(t, 2*wait, func() error {
				if m := h.missing(want); len(m) > 0 {
					return fmt.Errorf("%d of %d jobs not handled, among them %v", len(m), len(want), m[:min(len(m), 10)])
				}
				return nil
			}, "every job handled")

			var waited bool
			for len(logs) > 0 {
				r := <-logs
				if strings.Contains(r.Message, "being migrated") {
					waited = true
				}
			}
			if !waited {
				t.Error("the worker started mid-migration logged no wait for it")
			}
			work, dead := brokerArgs(t, name), brokerArgs(t, name+".dead")
			tc.check(t, work, dead)
			if n := queueLen(t, rawChannel(t), name+".dead"); n != 10 {
				t.Errorf("dead letters = %d, want 10", n)
			}
			if res.Moved < 1000 {
				t.Errorf("moved = %d, want at least the 1,000 ready jobs", res.Moved)
			}
			if _, err := mb.MigrateQueue(ctx, neu, admin.MigrateOptions{}); !errors.Is(err, admin.ErrNothingToMigrate) {
				t.Errorf("second migration: %v, want ErrNothingToMigrate", err)
			}
		})
	}
}

// TestMismatchSaysEveryDifferenceAndTheCommand: a producer whose queue
// exists with other arguments, and no migration under way, is refused at
// once, naming every argument that differs and the command that migrates
// the queue.
func TestMismatchSaysEveryDifferenceAndTheCommand(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind, q.MaxPriority = runtime.KindOf[job](), 3
	if _, err := runtime.NewProducer(ctxT(t), b, q); err != nil {
		t.Fatal(err)
	}
	q.MaxPriority = 8
	_, err := runtime.NewProducer(ctxT(t), dial(t, rabbitmq.Options{}), q)
	if !errors.Is(err, runtime.ErrQueueMismatch) {
		t.Fatalf("NewProducer = %v, want ErrQueueMismatch", err)
	}
	for _, want := range []string{q.Name + " x-max-priority: broker 3, annotation 8", "queuey queues migrate " + q.Name} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestMigrateResumes: a migration cut short while the queue is gone
// leaves its jobs in the temporary queue, where a producer's enqueue
// lands too; running it again finishes it and resumes the queue.
func TestMigrateResumes(t *testing.T) {
	name := queueName(t, ".migrating")
	old := runtime.DefaultQueueConfig(name)
	old.Kind, old.MaxPriority = runtime.KindOf[job](), 3
	neu := old
	neu.MaxPriority = 8
	b := dial(t, rabbitmq.Options{})
	p, err := runtime.NewProducer(ctxT(t), b, old)
	if err != nil {
		t.Fatal(err)
	}
	jobs := make([]job, 50)
	if _, err := runtime.EnqueueMany(ctxT(t), p, old, jobs); err != nil {
		t.Fatal(err)
	}
	cut, cancel := context.WithCancel(ctxT(t))
	_, err = b.MigrateQueue(cut, neu, admin.MigrateOptions{Progress: func(step string) {
		if strings.HasPrefix(step, `declare "`+name+`" with`) {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("the migration cut short reported success")
	}
	ch := rawChannel(t)
	if n := queueLen(t, ch, name+".migrating"); n != 50 {
		t.Fatalf("cut short: %d jobs in the temporary queue, want 50", n)
	}
	// The queue is gone: an enqueue lands in the temporary queue.
	if _, err := runtime.Enqueue(ctxT(t), p, old, job{N: 50}); err != nil {
		t.Fatalf("enqueue while the queue is gone: %v", err)
	}
	if n := queueLen(t, ch, name+".migrating"); n != 51 {
		t.Errorf("%d jobs in the temporary queue, want 51", n)
	}
	res, err := b.MigrateQueue(ctxT(t), neu, admin.MigrateOptions{})
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if !res.Resumed || res.Moved != 51 {
		t.Errorf("second run: resumed %v, moved %d; want true, 51", res.Resumed, res.Moved)
	}
	if n := queueLen(t, ch, name); n != 51 {
		t.Errorf("%d jobs in the queue, want 51", n)
	}
	if got := brokerArgs(t, name).Arguments["x-max-priority"]; got != float64(8) {
		t.Errorf("x-max-priority = %v, want 8", got)
	}
	if paused, err := b.Paused(ctxT(t), name); err != nil || paused {
		t.Errorf("paused = %v (%v), want resumed", paused, err)
	}
}

// TestMigrateKeepsLadderWaits: waits on the delay ladder that end while
// the queue is migrated land in the temporary queue, bound to the
// ladder's delivery exchange as the queue is, and the queue declared anew
// is bound again: every wait is handled, none goes to the ladder's
// unrouted queue.
func TestMigrateKeepsLadderWaits(t *testing.T) {
	name := queueName(t, ".migrating")
	old := runtime.DefaultQueueConfig(name)
	old.Kind, old.MaxPriority, old.Delay = runtime.KindOf[job](), 3, runtime.DelayLadder
	neu := old
	neu.MaxPriority = 8
	b := dial(t, rabbitmq.Options{})
	p, err := runtime.NewProducer(ctxT(t), b, old)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for i := range 40 {
		d := time.Duration(200+50*i) * time.Millisecond
		if _, err := runtime.Enqueue(ctxT(t), p, old, job{N: i}, runtime.WithDelay(d)); err != nil {
			t.Fatal(err)
		}
		want = append(want, i)
	}
	mctx, cancel := context.WithTimeout(context.Background(), 3*wait)
	defer cancel()
	if _, err := b.MigrateQueue(mctx, neu, admin.MigrateOptions{}); err != nil {
		t.Fatal(err)
	}
	h := &handled{seen: map[int]int{}}
	runWorker(t, dial(t, rabbitmq.Options{}), neu, func(_ context.Context, j job) error { h.add(j.N); return nil })
	eventually.Nil(t, wait, func() error {
		if m := h.missing(want); len(m) > 0 {
			return fmt.Errorf("%d of %d waits not handled, among them %v", len(m), len(want), m[:min(len(m), 10)])
		}
		return nil
	}, "every ladder wait handled")
}
