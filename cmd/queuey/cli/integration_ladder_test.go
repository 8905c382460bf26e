package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/runtime"
)

// testLadder is the ladder of the test's queue: the classic one of the
// default granularity, which the command looks for with or without the
// management API.
const testLadder = "queuey.ladder.classic.1000ms"

// unroutedOf lists, through the command, the unrouted waits of queue.
func (bq *brokerQueue) unroutedOf(queue string) ([]admin.UnroutedWait, result) {
	bq.t.Helper()
	r := bq.cli(ctxT(bq.t), cli.Env{}, "--json", "ladder", "unrouted", queue, "--ladder", testLadder)
	var out struct {
		Waits []admin.UnroutedWait `json:"waits"`
	}
	if err := json.Unmarshal([]byte(r.out), &out); err != nil {
		bq.t.Fatalf("ladder unrouted --json: %v\n%s", err, r.out)
	}
	return out.Waits, r
}

// TestBrokerLadderUnrouted: the waits of a ladder-mode queue deleted while
// they wait are listed by queuey ladder unrouted and counted by queuey
// queues and queuey ladder ls; a re-drive while the queue is missing
// leaves them and fails naming it; a re-drive naming a queue no wait was
// for fails; a dry run moves nothing; once the queue is declared again a
// re-drive puts each back, and each job runs once.
func TestBrokerLadderUnrouted(t *testing.T) {
	bq := newBrokerQueue(t)
	q := bq.q
	q.Delay = runtime.DelayLadder
	q.Name += ".ladder"
	t.Cleanup(func() {
		conn, err := amqp.Dial(bq.url)
		if err != nil {
			return
		}
		defer conn.Close()
		for _, n := range []string{q.Name, q.Name + ".dead"} {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(n, false, false, false)
				ch.Close()
			}
		}
	})
	p, err := runtime.NewProducer(ctxT(t), bq.b, q)
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"lu-1", "lu-2"}
	for i, id := range ids {
		if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}, runtime.WithID(id), runtime.WithDelay(1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rawChannel(t, bq.url).QueueDelete(q.Name, false, false, false); err != nil {
		t.Fatal(err)
	}

	var ws []admin.UnroutedWait
	eventually.Nil(t, wait, func() error {
		var r result
		ws, r = bq.unroutedOf(q.Name)
		if r.code != 0 || len(ws) != len(ids) {
			return fmt.Errorf("exit %d, %d waits, want %d: %s%s", r.code, len(ws), len(ids), r.out, r.err)
		}
		return nil
	}, "the deleted queue's waits unrouted")
	var got []string
	for _, w := range ws {
		got = append(got, w.ID)
		if w.Queue != q.Name || w.QueueExists || w.Kind != q.Kind {
			t.Errorf("unrouted wait %+v, want for %q, which does not exist, of kind %q", w, q.Name, q.Kind)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, ids) {
		t.Errorf("unrouted waits %q, want %q", got, ids)
	}
	ladder := ws[0].Ladder

	r := bq.cli(ctxT(t), cli.Env{}, "ladder", "unrouted", q.Name, "--ladder", testLadder)
	if r.code != 0 || !strings.Contains(r.out, "QUEUE_EXISTS") || !strings.Contains(r.out, "0 for a queue that exists") {
		t.Errorf("ladder unrouted: exit %d, want 0 and a table saying none of the queues exists:\n%s%s", r.code, r.out, r.err)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "ladder", "ls")
	if r.code != 0 || !strings.Contains(r.out, ladder) || !strings.Contains(r.out, "UNROUTED") {
		t.Errorf("ladder ls: exit %d, want 0 and the ladder %s:\n%s%s", r.code, ladder, r.out, r.err)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "--json", "queues", bq.q.Name)
	var qs struct {
		Ladders []admin.LadderStats `json:"ladders"`
	}
	if err := json.Unmarshal([]byte(r.out), &qs); err != nil {
		t.Fatalf("queues --json: %v\n%s", err, r.out)
	}
	if i := slices.IndexFunc(qs.Ladders, func(l admin.LadderStats) bool { return l.Name == ladder }); i < 0 || qs.Ladders[i].Unrouted < len(ids) {
		t.Errorf("queues --json: ladders %+v, want %s with at least %d unrouted", qs.Ladders, ladder, len(ids))
	}
	r = bq.cli(ctxT(t), cli.Env{}, "queues", bq.q.Name)
	if !strings.Contains(r.out, "unrouted wait") || !strings.Contains(r.out, "queuey ladder redrive") {
		t.Errorf("queues: want a note of the unrouted waits:\n%s", r.out)
	}

	// Still missing: they stay, and the command fails naming the queue.
	r = bq.cli(ctxT(t), cli.Env{}, "ladder", "redrive", q.Name, "--yes", "--ladder", testLadder)
	if r.code != cli.ExitFailure || !strings.Contains(r.out, "2 unrouted waits stay") || !strings.Contains(r.err, q.Name) {
		t.Errorf("ladder redrive onto a missing queue: exit %d, want %d, saying 2 stay and naming %s:\n%s%s", r.code, cli.ExitFailure, q.Name, r.out, r.err)
	}
	if ws, _ := bq.unroutedOf(q.Name); len(ws) != len(ids) {
		t.Errorf("after a re-drive onto a missing queue: %d unrouted, want %d", len(ws), len(ids))
	}
	// A queue no wait was for.
	none := q.Name + ".none"
	for _, args := range [][]string{{"ladder", "redrive", none, "--yes", "--ladder", testLadder}, {"ladder", "unrouted", none, "--ladder", testLadder}} {
		r = bq.cli(ctxT(t), cli.Env{}, args...)
		if r.code != cli.ExitFailure || !strings.Contains(r.err, "no unrouted wait is for") {
			t.Errorf("%s: exit %d, want %d saying no wait is for it:\n%s%s", strings.Join(args, " "), r.code, cli.ExitFailure, r.out, r.err)
		}
	}
	if r = bq.cli(ctxT(t), cli.Env{}, "ladder", "redrive", "--yes"); r.code != cli.ExitUsage {
		t.Errorf("ladder redrive with no queue nor --all: exit %d, want %d", r.code, cli.ExitUsage)
	}
	if r = bq.cli(ctxT(t), cli.Env{}, "ladder", "unrouted", "--ladder", "queuey.ladder.classic.7ms.nope"); r.code != cli.ExitFailure || !strings.Contains(r.err, "no delay ladder") {
		t.Errorf("ladder unrouted --ladder of no ladder: exit %d, want %d saying so: %s", r.code, cli.ExitFailure, r.err)
	}

	if err := bq.b.Declare(ctxT(t), q); err != nil {
		t.Fatal(err)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "ladder", "redrive", q.Name, "--dry-run", "--ladder", testLadder)
	if r.code != 0 || !strings.Contains(r.out, "would put back 2 unrouted waits") {
		t.Errorf("ladder redrive --dry-run: exit %d, want 0 saying 2 would be put back:\n%s%s", r.code, r.out, r.err)
	}
	if ws, _ := bq.unroutedOf(q.Name); len(ws) != len(ids) || !ws[0].QueueExists {
		t.Errorf("after a dry run: %+v, want %d unrouted, their queue existing", ws, len(ids))
	}
	r = bq.cli(ctxT(t), cli.Env{}, "ladder", "redrive", q.Name, "--yes", "--ladder", testLadder)
	if r.code != 0 || !strings.Contains(r.out, "put back 2 unrouted waits") || !strings.Contains(r.out, "2 onto "+q.Name) {
		t.Errorf("ladder redrive: exit %d, want 0 saying 2 were put back onto %s:\n%s%s", r.code, q.Name, r.out, r.err)
	}
	if ws, r := bq.unroutedOf(q.Name); len(ws) != 0 || r.code != cli.ExitFailure {
		t.Errorf("after the re-drive: %d unrouted (exit %d), want none, and the name matching nothing", len(ws), r.code)
	}

	var mu sync.Mutex
	runs := map[string]int{}
	w := runtime.NewWorker(bq.b)
	runtime.Handle(w, q, func(ctx context.Context, _ job) error {
		info, _ := runtime.InfoFromContext(ctx)
		mu.Lock()
		runs[info.ID]++
		mu.Unlock()
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually.True(t, wait, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) == len(ids)
	}, "both re-driven jobs run")
	cancel()
	if err := <-done; err != nil {
		t.Errorf("worker: %v", err)
	}
	done <- nil // for the cleanup
	for _, id := range ids {
		if runs[id] != 1 {
			t.Errorf("job %s ran %d times, want once", id, runs[id])
		}
	}
}
