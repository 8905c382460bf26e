package outbox_test

import (
	"bufio"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// TestRelayKilled kills a relay (a child process) with SIGKILL a few times
// while jobs are enqueued: no committed job is lost, and each kill
// publishes again at most the one batch it had in flight.
func TestRelayKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills relay processes under load")
	}
	pool, schema := database(t)
	b := dial(t)
	q := testQueue(t)
	declare(t, b, q)
	h := newHandled()
	brokertest.RunWorker(t, b, q, h.handler)

	const (
		batch = 50
		kills = 4
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()

	// The load: transactions of 10 jobs until the kills are done.
	var (
		mu        sync.Mutex
		committed []string
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				var ids []string
				err := inTx(ctx, pool, true, func(tx pgx.Tx) error {
					var err error
					ids, err = runtime.EnqueueMany(ctx, outbox.Producer(outbox.PgxTx(tx)), q, make([]ping, 10))
					return err
				})
				if err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
				mu.Lock()
				committed = append(committed, ids...)
				mu.Unlock()
			}
		})
	}

	for i := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+schema, childBatchEnv+"="+strconv.Itoa(batch))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start relay %d: %v", i, err)
		}
		ready := make(chan bool, 1)
		go func() {
			s := bufio.NewScanner(out)
			ok := s.Scan() && s.Text() == "relay running"
			ready <- ok
			for s.Scan() {
			}
		}()
		select {
		case ok := <-ready:
			if !ok {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("relay %d did not start", i)
			}
		case <-time.After(wait):
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("relay %d did not start within %v", i, wait)
		}
		time.Sleep(time.Duration(200+rand.N(300)) * time.Millisecond) // the relay runs a while under load before it is killed
		if err := cmd.Process.Kill(); err != nil {
			t.Fatalf("kill relay %d: %v", i, err)
		}
		_ = cmd.Wait()
	}
	stop.Store(true)
	wg.Wait()

	// A relay of this process takes what is left.
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, BatchSize: batch, Logger: quiet()})
	mu.Lock()
	ids := committed
	mu.Unlock()
	h.waitDistinct(t, len(ids))
	waitEmpty(t, pool)
	got := h.snapshot()
	duplicates := 0
	for _, id := range ids {
		switch c := got[id]; {
		case c == 0:
			t.Errorf("committed job %q lost", id)
		case c > 1:
			duplicates += c - 1
		}
	}
	t.Logf("%d committed jobs, %d kills, %d duplicates", len(ids), kills, duplicates)
	if duplicates > kills*batch {
		t.Errorf("%d duplicates after %d kills, want at most %d (a batch of %d each)", duplicates, kills, kills*batch, batch)
	}
	if len(got) != len(ids) {
		t.Errorf("%d distinct jobs handled, %d committed", len(got), len(ids))
	}
}
