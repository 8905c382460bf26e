package outbox_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/outbox"
)

// rateEnv gates TestPoisonRate, a measurement rather than a test.
const rateEnv = "QUEUEY_OUTBOX_RATE"

// TestPoisonRate measures, in one sitting, the jobs handled while
// producers commit 100 jobs/s, one per transaction, for
// $QUEUEY_OUTBOX_RATE seconds (20 when it is 1 or not a number): once on
// a clean outbox, once on one that holds a poison row of each kind ahead
// of them. It logs both rates and when the poison rows were all moved
// aside. Run it with
//
//	QUEUEY_OUTBOX_RATE=20 go test -run TestPoisonRate -v ./outbox/
func TestPoisonRate(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv(rateEnv))
	if os.Getenv(rateEnv) == "" {
		t.Skip(rateEnv + " is not set: this is a measurement, not a test")
	}
	if secs <= 1 {
		secs = 20
	}
	d := time.Duration(secs) * time.Second
	b := dialPoison(t)
	for _, poisoned := range []bool{false, true} {
		pool, _ := database(t)
		q := testQueue(t)
		declare(t, b, q)
		var handled atomic.Int64
		brokertest.RunWorker(t, b, q, func(context.Context, ping) error {
			handled.Add(1)
			return nil
		})
		if poisoned {
			dropRules(t, pool)
			for _, p := range poisons {
				insertPoison(t, pool, q, p)
			}
		}
		start := time.Now()
		stop := brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, Logger: quiet()})
		// The poison rows' way aside, watched apart from the load.
		deadAt := make(chan time.Duration, 1)
		watchCtx, stopWatch := context.WithCancel(context.Background())
		var watch sync.WaitGroup
		if poisoned {
			watch.Go(func() {
				for watchCtx.Err() == nil {
					var dead int
					if err := pool.QueryRow(watchCtx, "SELECT count(*) FROM queuey_outbox_dead").Scan(&dead); err == nil && dead == len(poisons) {
						deadAt <- time.Since(start)
						return
					}
					time.Sleep(5 * time.Millisecond) // polling that measures when the poisons are set aside: the interval is its resolution
				}
			})
		}
		// 100 jobs/s, each committed in a transaction of its own, from up
		// to 8 at once, so that a slow commit does not slow the load.
		var (
			sent     atomic.Int64
			inflight sync.WaitGroup
		)
		sem := make(chan struct{}, 8)
		tick := time.NewTicker(10 * time.Millisecond)
		for time.Since(start) < d {
			<-tick.C
			sem <- struct{}{}
			i := int(sent.Add(1))
			inflight.Go(func() {
				defer func() { <-sem }()
				enqueue(t, pool, q, i, true)
			})
		}
		tick.Stop()
		n := handled.Load()
		elapsed := time.Since(start)
		inflight.Wait()
		stopWatch()
		watch.Wait()
		left, dead := rowsLeft(t, pool)
		stop()
		name := "clean outbox"
		if poisoned {
			name = "one poison row of each kind (" + strconv.Itoa(len(poisons)) + ")"
		}
		t.Logf("%s: %d jobs handled in %v (%d enqueues begun): %.1f jobs/s; then %d rows left, %d dead", name, n, elapsed.Round(time.Millisecond), sent.Load(), float64(n)/elapsed.Seconds(), left, dead)
		if poisoned {
			select {
			case at := <-deadAt:
				t.Logf("the %d poison rows all moved aside %v after the relay started", len(poisons), at.Round(time.Millisecond))
			default:
				t.Errorf("the %d poison rows were not all moved aside: %d dead", len(poisons), dead)
			}
		}
	}
}
