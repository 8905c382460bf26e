package outbox_test

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/brokertest"
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
		deadAt := time.Duration(-1)
		tick := time.NewTicker(10 * time.Millisecond)
		sent := 0
		for time.Since(start) < d {
			<-tick.C
			enqueue(t, pool, q, sent, true)
			sent++
			if _, dead := rowsLeft(t, pool); poisoned && deadAt < 0 && dead == len(poisons) {
				deadAt = time.Since(start)
			}
		}
		tick.Stop()
		n := handled.Load()
		elapsed := time.Since(start)
		left, dead := rowsLeft(t, pool)
		stop()
		name := "clean outbox"
		if poisoned {
			name = "one poison row of each kind (" + strconv.Itoa(len(poisons)) + ")"
		}
		t.Logf("%s: %d of %d jobs handled in %v: %.1f jobs/s; %d rows left, %d dead", name, n, sent, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), left, dead)
		if poisoned {
			t.Logf("poison rows all moved aside %v after the relay started", deadAt.Round(time.Millisecond))
		}
	}
}
