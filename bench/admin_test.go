package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// deadLetters is how many dead letters BenchmarkAdmin reads among:
// $QUEUEY_BENCH_DEAD_LETTERS, or 100,000 (the size a dashboard must stay
// responsive with) when unset.
func deadLetters(b *testing.B) int {
	if s := os.Getenv("QUEUEY_BENCH_DEAD_LETTERS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			b.Fatalf("QUEUEY_BENCH_DEAD_LETTERS=%q: want a number of at least 100", s)
		}
		return n
	}
	return 100_000
}

// adminWait bounds BenchmarkAdmin: filling two queues with 100,000 letters
// each and reading through them takes longer than benchWait on a busy
// machine.
const adminWait = 30 * time.Minute

// BenchmarkAdmin measures the admin API on 100 queues and on a
// dead-letter queue of n letters (see deadLetters):
//
//	QueueStats100   the stats of 100 queues in one call
//	FirstPage       the oldest 50 letters (what a list view opens on)
//	PageAtMiddle    the 50 letters after a cursor at position n/2
//	ShowLast        one letter by ID, the last but one
//	ShowLastIndexMade
//	                the same through a new backend that keeps an index
//	                (rabbitmq.Options.DeadLetterIndex), which reads the
//	                whole queue once to make it
//	PageAtMiddleIndexed
//	ShowLastIndexed PageAtMiddle and ShowLast through a backend whose
//	                index is made
//	QuorumFirstPage the oldest 50 letters of a quorum dead-letter queue of
//	                n letters, which every read goes through whole
//
//	go test -run '^$' -bench Admin -benchtime 3x ./bench/
//
// With -short only QueueStats100 runs: filling 100,000 letters takes a
// while.
func BenchmarkAdmin(b *testing.B) {
	requireBroker(b)
	ctx, cancel := context.WithTimeout(context.Background(), adminWait)
	defer cancel()
	be := dialBroker(b, ctx, rabbitmq.Options{})
	defer be.Close()
	name := fmt.Sprintf("queuey-bench.admin.%d", time.Now().UnixNano())
	var names []string
	defer func() { brokertest.DeleteQueues(amqpURL(), names...) }()
	qs := make([]runtime.QueueConfig, 100)
	for i := range qs {
		qs[i] = runtime.DefaultQueueConfig(fmt.Sprintf("%s.%03d", name, i))
		qs[i].Kind = "benchJob"
		names = append(names, qs[i].Name, qs[i].Name+".dead")
	}
	if _, err := runtime.NewProducer(ctx, be, qs...); err != nil {
		b.Fatal(err)
	}
	stats := make([]admin.Queue, len(qs))
	for i, q := range qs {
		stats[i] = admin.QueueOf(q)
	}
	b.Run("QueueStats100", func(b *testing.B) {
		for b.Loop() {
			st, err := be.QueueStats(ctx, stats...)
			if err != nil || len(st) != 100 {
				b.Fatalf("%d stats, %v", len(st), err)
			}
		}
	})
	if testing.Short() {
		return
	}
	q := qs[0]
	n := deadLetters(b)
	ids := fillDead(b, ctx, be, q, n)

	b.Run("FirstPage", func(b *testing.B) {
		for b.Loop() {
			l, err := be.DeadLetters(ctx, q.Name, admin.DeadLetterPage{Limit: 50})
			if err != nil || len(l.Letters) != 50 {
				b.Fatalf("%d letters, %v", len(l.Letters), err)
			}
		}
	})
	b.Run("PageAtMiddle", func(b *testing.B) {
		after := admin.Cursor(n/2, ids[n/2-1])
		for b.Loop() {
			l, err := be.DeadLetters(ctx, q.Name, admin.DeadLetterPage{After: after, Limit: 50})
			if err != nil || len(l.Letters) != 50 || l.Letters[0].ID != ids[n/2] {
				b.Fatalf("%d letters, %v", len(l.Letters), err)
			}
		}
	})
	b.Run("ShowLast", func(b *testing.B) {
		for b.Loop() {
			if _, err := be.DeadLetter(ctx, q.Name, ids[n-2]); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same reads through a backend that keeps an index
	// (rabbitmq.Options.DeadLetterIndex), as the dashboard does: the first
	// read makes it, the rest use it.
	ib := dialBroker(b, ctx, rabbitmq.Options{DeadLetterIndex: true})
	defer ib.Close()
	b.Run("ShowLastIndexMade", func(b *testing.B) {
		for b.Loop() {
			fresh := dialBroker(b, ctx, rabbitmq.Options{DeadLetterIndex: true})
			_, err := fresh.DeadLetter(ctx, q.Name, ids[n-2])
			_ = fresh.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PageAtMiddleIndexed", func(b *testing.B) {
		after := admin.Cursor(n/2, ids[n/2-1])
		if _, err := ib.DeadLetters(ctx, q.Name, admin.DeadLetterPage{After: after, Limit: 50}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			l, err := ib.DeadLetters(ctx, q.Name, admin.DeadLetterPage{After: after, Limit: 50})
			if err != nil || len(l.Letters) != 50 || l.Letters[0].ID != ids[n/2] {
				b.Fatalf("%d letters, %v", len(l.Letters), err)
			}
		}
	})
	b.Run("ShowLastIndexed", func(b *testing.B) {
		if _, err := ib.DeadLetter(ctx, q.Name, ids[n-2]); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := ib.DeadLetter(ctx, q.Name, ids[n-2]); err != nil {
				b.Fatal(err)
			}
		}
	})
	qq := runtime.DefaultQueueConfig(name + ".quorum")
	qq.Kind, qq.QueueType, qq.MaxPriority = "benchJob", runtime.QueueQuorum, runtime.NoPriority
	names = append(names, qq.Name, qq.Name+".dead")
	if _, err := runtime.NewProducer(ctx, be, qq); err != nil {
		b.Fatal(err)
	}
	fillDead(b, ctx, be, qq, n)
	b.Run("QuorumFirstPage", func(b *testing.B) {
		for b.Loop() {
			l, err := be.DeadLetters(ctx, qq.Name, admin.DeadLetterPage{Limit: 50})
			if err != nil || len(l.Letters) != 50 || l.Total != n {
				b.Fatalf("%d letters of %d, %v", len(l.Letters), l.Total, err)
			}
		}
	})
}

// fillDead puts n dead letters on q's dead-letter queue, as many in flight
// at once as PublishBatch keeps, and returns their IDs in order.
func fillDead(b *testing.B, ctx context.Context, be *rabbitmq.Backend, q runtime.QueueConfig, n int) []string {
	b.Helper()
	ids := make([]string, 0, n)
	const chunk = 1000
	for len(ids) < n {
		envs := make([]*runtime.Envelope, 0, chunk)
		for range min(chunk, n-len(ids)) {
			id := fmt.Sprintf("job-%06d", len(ids)+len(envs))
			envs = append(envs, &runtime.Envelope{
				ID: id, Queue: q.Name + ".dead", Kind: "benchJob", Payload: []byte{0x81, 0xa1, 'N', 0x01},
				Attempt: 5, MaxAttempts: 5, EnqueuedAt: time.Now(), LastError: "smtp: 550 mailbox does not exist",
			})
		}
		for _, err := range be.PublishBatch(ctx, envs) {
			if err != nil {
				b.Fatal(err)
			}
		}
		for _, e := range envs {
			ids = append(ids, e.ID)
		}
	}
	return ids
}
