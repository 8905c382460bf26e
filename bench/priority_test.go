package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// Sizes of BenchmarkMaxPriority's runs.
const (
	priorityQueues  = 200   // declared afresh, then measured idle
	priorityBacklog = 20000 // jobs drained by a worker
)

// priorityJob is a job of about 200 bytes once encoded.
type priorityJob struct {
	Body string
}

// BenchmarkMaxPriority measures what a queue's max_priority costs at 0
// (no x-max-priority), 1 (two levels: enough for a deferral to return
// ahead of the backlog) and 10 (the annotation's default), alternating
// between them -rounds times: how fast 200 queues are declared afresh
// (queuey's declare, without dead-letter queues), the broker memory an
// idle queue holds (`rabbitmqctl list_queues name memory`, median of the
// 200; left out when rabbitmqctl cannot be run), and how fast one worker
// (prefetch 50) drains a backlog of 20,000 jobs. Figures are medians.
//
//	go test -run '^$' -bench MaxPriority ./bench/
func BenchmarkMaxPriority(b *testing.B) {
	requireBroker(b)
	levels := []int{0, 1, 10}
	declares := make([][]float64, len(levels))
	memory := make([][]float64, len(levels))
	drains := make([][]float64, len(levels))
	for b.Loop() {
		for i := range *rounds {
			for j, mp := range levels {
				rate, mem := declareIdle(b, mp, uniqueBenchName(fmt.Sprintf("priority%d.idle", mp), i))
				declares[j] = append(declares[j], rate)
				if mem > 0 {
					memory[j] = append(memory[j], mem)
				}
				drains[j] = append(drains[j], drainBacklog(b, mp, uniqueBenchName(fmt.Sprintf("priority%d.drain", mp), i)))
			}
		}
	}
	for j, mp := range levels {
		prefix := fmt.Sprintf("mp%d-", mp)
		b.ReportMetric(median(declares[j]), prefix+"declares/s")
		if len(memory[j]) > 0 {
			b.ReportMetric(median(memory[j])/1000, prefix+"idle-kB/queue")
		}
		b.ReportMetric(median(drains[j]), prefix+"drain-jobs/s")
		b.Logf("max_priority=%d: %.0f declares/s, idle queue %.0f kB of broker memory, backlog drained at %.0f jobs/s",
			mp, median(declares[j]), median(memory[j])/1000, median(drains[j]))
	}
	b.ReportMetric(0, "ns/op")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	return s[len(s)/2]
}

func benchBackend(b *testing.B, ctx context.Context) *rabbitmq.Backend {
	return dialBroker(b, ctx, rabbitmq.Options{NoDeadLetterQueues: true})
}

// declareIdle declares priorityQueues queues of max_priority mp that do
// not exist yet, and returns how many were declared per second and the
// median broker memory of one, idle (0 when rabbitmqctl cannot tell). The
// queues are deleted after.
func declareIdle(b *testing.B, mp int, prefix string) (rate, mem float64) {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be := benchBackend(b, ctx)
	defer be.Close()
	queues := make([]runtime.QueueConfig, priorityQueues)
	names := make([]string, priorityQueues)
	for i := range queues {
		queues[i] = runtime.DefaultQueueConfig(fmt.Sprintf("%s.%d", prefix, i))
		queues[i].MaxPriority = configPriority(mp)
		names[i] = queues[i].Name
	}
	defer brokertest.DeleteQueues(amqpURL(), names...)
	start := time.Now()
	if _, err := runtime.NewProducer(ctx, be, queues...); err != nil {
		b.Fatal(err)
	}
	rate = float64(priorityQueues) / time.Since(start).Seconds()
	byName, err := queueMemory(ctx, prefix+".")
	if err != nil {
		b.Logf("idle queue memory not measured: %v", err)
		return rate, 0
	}
	return rate, median(slices.Collect(maps.Values(byName)))
}

// queueMemory returns the memory, in bytes, of each queue whose name
// starts with prefix, by name, as rabbitmqctl reports it.
func queueMemory(ctx context.Context, prefix string) (map[string]float64, error) {
	out, err := brokertest.Ctl(ctx, "list_queues", "-q", "--no-table-headers", "name", "memory").Output()
	if err != nil {
		return nil, fmt.Errorf("rabbitmqctl list_queues: %w", err)
	}
	mems := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, mem, ok := strings.Cut(sc.Text(), "\t")
		if !ok || !strings.HasPrefix(name, prefix) {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(mem), 64)
		if err != nil {
			return nil, fmt.Errorf("rabbitmqctl list_queues: memory of %q: %w", name, err)
		}
		mems[name] = n
	}
	if len(mems) == 0 {
		return nil, fmt.Errorf("rabbitmqctl list_queues lists no queue named %s*", prefix)
	}
	return mems, nil
}

// drainBacklog enqueues priorityBacklog jobs onto a fresh queue of
// max_priority mp, then runs a worker on it and returns how many jobs per
// second it drained, from the worker's start to its last job. The queue
// is deleted after.
func drainBacklog(b *testing.B, mp int, name string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be := benchBackend(b, ctx)
	defer be.Close()
	q := runtime.DefaultQueueConfig(name)
	q.Kind = runtime.KindOf[priorityJob]()
	q.MaxPriority = configPriority(mp)
	q.Prefetch = prefetch
	defer brokertest.DeleteQueues(amqpURL(), name)
	p, err := runtime.NewProducer(ctx, be, q)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]priorityJob, 1000)
	for i := range batch {
		batch[i] = priorityJob{Body: strings.Repeat("x", 150)}
	}
	for range priorityBacklog / len(batch) {
		if _, err := runtime.EnqueueMany(ctx, p, q, batch); err != nil {
			b.Fatal(err)
		}
	}
	var handled atomic.Int64
	done := make(chan struct{})
	w := runtime.NewWorker(be)
	runtime.Handle(w, q, func(ctx context.Context, j priorityJob) error {
		if handled.Add(1) == priorityBacklog {
			close(done)
		}
		return nil
	})
	wctx, stop := context.WithCancel(ctx)
	errc := make(chan error, 1)
	start := time.Now()
	go func() { errc <- w.Run(wctx) }()
	select {
	case <-done:
	case err := <-errc:
		b.Fatalf("worker ended before draining the backlog: %v", err)
	case <-ctx.Done():
		b.Fatalf("backlog not drained within %v: %d of %d jobs", benchWait, handled.Load(), priorityBacklog)
	}
	elapsed := time.Since(start)
	stop()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return float64(priorityBacklog) / elapsed.Seconds()
}
