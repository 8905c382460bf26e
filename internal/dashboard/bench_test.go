package dashboard

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/runtime"
)

// benchServer is a dashboard over a memory backend with queues queues, the
// first holding dead dead letters.
func benchServer(b *testing.B, queues, dead int) (*Server, string) {
	b.Helper()
	ctx := context.Background()
	mb := runtime.NewMemoryBackend()
	b.Cleanup(func() { mb.Close() })
	var first runtime.QueueConfig
	for i := range queues {
		cfg := runtime.QueueConfig{Name: fmt.Sprintf("bench.q%03d", i), Kind: runtime.KindOf[job](), Prefetch: 1000}
		if err := mb.Declare(ctx, cfg); err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			first = cfg
		}
	}
	p := runtime.NewProducerUndeclared(mb)
	payload, _ := msgpack.Marshal(job{To: "a@example.com", Note: "bench"})
	sub, err := mb.Consume(ctx, first)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Close()
	var last string
	for n := 0; n < dead; {
		batch := make([][]byte, min(1000, dead-n))
		for i := range batch {
			batch[i] = payload
		}
		if _, err := runtime.Hooks(hooks.K).EnqueuePayloads(ctx, p, first, batch); err != nil {
			b.Fatal(err)
		}
		for range batch {
			d := <-sub.Deliveries()
			if err := d.DeadLetter(ctx, d.Envelope(), "boom"); err != nil {
				b.Fatal(err)
			}
			last = d.Envelope().ID
			n++
		}
	}
	srv, err := New(mb, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	return srv, last
}

func benchGet(b *testing.B, h http.Handler, path string) {
	b.Helper()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s = %d", path, rec.Code)
		}
	}
}

// BenchmarkOverview100Queues is one overview of 100 queues. The snapshot
// is cached for sampleEvery, so this measures rendering; the Admin's
// share is BenchmarkSnapshot100Queues.
func BenchmarkOverview100Queues(b *testing.B) {
	srv, _ := benchServer(b, 100, 0)
	benchGet(b, srv, "/")
}

// BenchmarkSnapshot100Queues is the Admin's stats of 100 queues, as each
// refresh asks at most every sampleEvery.
func BenchmarkSnapshot100Queues(b *testing.B) {
	srv, _ := benchServer(b, 100, 0)
	for b.Loop() {
		if _, err := srv.takeSnapshot(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueuePage100kDead is the first page of a queue with 100,000
// dead letters.
func BenchmarkQueuePage100kDead(b *testing.B) {
	srv, _ := benchServer(b, 1, 100_000)
	benchGet(b, srv, "/queues/bench.q000")
}

// BenchmarkLetterPage100kDeadLast is the page of the newest of 100,000
// dead letters: a lookup by ID, which the Admin answers by scanning.
func BenchmarkLetterPage100kDeadLast(b *testing.B) {
	srv, last := benchServer(b, 1, 100_000)
	benchGet(b, srv, "/queues/bench.q000/dead/"+last)
}
