package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	poll "github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// The limits of TestLimitTokensSurviveBrokerRestart: a Limit of
// restartLimit on one queue, a Rate of restartRate a second on another.
const (
	restartLimit = 7
	restartRate  = 5
)

// How long a job of each queue works: the limited queue's long enough
// that its workers hold every token most of the time, the rate queue's
// short.
const (
	limitWork = 300 * time.Millisecond
	rateWork  = 20 * time.Millisecond
)

// TestLimitTokensSurviveBrokerRestart: the broker's app restarts while
// two workers run a queue with a Limit of 7, their jobs holding tokens,
// and a queue with a Rate of 5/s. Once the broker is back and both
// workers run jobs again, every token is usable (7 jobs of the limited
// queue run at once) and no more are (never 8 of the jobs begun after the
// restart); with the workers stopped, the token queues hold exactly 7 and
// 5 tokens and the ledgers say 7 and 5: the restart lost none and minted
// none. For classic and quorum queues.
func TestLimitTokensSurviveBrokerRestart(t *testing.T) {
	for _, typ := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
		t.Run(string(typ), func(t *testing.T) { limitTokensSurviveRestart(t, typ) })
	}
}

func limitTokensSurviveRestart(t *testing.T, typ runtime.QueueType) {
	url := gate(t)
	lq := limitedQueue(t, url, typ, "limit")
	lq.Limit = restartLimit
	rq := limitedQueue(t, url, typ, "rate")
	rq.Rate = runtime.Rate{N: restartRate, Per: time.Second}
	restoreBroker(t) // before the queues' clean-up, which needs the broker
	lnames, rnames := brokertest.LimitQueuesOf(lq.Name), brokertest.LimitQueuesOf(rq.Name)

	ctx, cancel := context.WithTimeout(context.Background(), 5*wait)
	defer cancel()
	p, err := runtime.NewProducer(ctx, dial(t, url, rabbitmq.Options{}), lq, rq)
	if err != nil {
		t.Fatal(err)
	}
	// More jobs than the run handles, on both queues, so that the
	// workers always wait for tokens; those left are deleted with the
	// queues.
	for _, q := range []runtime.QueueConfig{lq, rq} {
		for range 4 {
			if _, err := runtime.EnqueueMany(ctx, p, q, make([]job, 250)); err != nil {
				t.Fatal(err)
			}
		}
	}

	var limited, rated brokertest.Runs
	workers := []string{"w1", "w2"}
	var stops []func()
	for _, name := range workers {
		b := dial(t, url, rabbitmq.Options{})
		w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second))
		runtime.Handle(w, lq, work(&limited, name, limitWork))
		runtime.Handle(w, rq, work(&rated, name, rateWork))
		stop := brokertest.Run(t, w)
		stops = append(stops, func() { stop(); _ = b.Close() })
	}

	// Both workers run; the tokens are minted, and jobs hold them.
	eventually(t, "7 jobs of the limited queue run at once, on both workers", func() bool {
		return limited.Stats().MaxRunning == restartLimit && limited.WorkersAfter(time.Time{}, workers...)
	})
	eventually(t, "jobs of the rate queue run on both workers", func() bool {
		return rated.WorkersAfter(time.Time{}, workers...)
	})
	held := limited.Stats().Running
	if held == 0 {
		t.Fatalf("no job of the limited queue holds a token before the restart: %v", limited.Stats())
	}
	before := limited.Stats()
	if before.MaxRunning > restartLimit {
		t.Errorf("before the restart: %v, want at most %d at once", before, restartLimit)
	}

	down := time.Now()
	rabbitmqctl(t, "stop_app")
	rabbitmqctl(t, "start_app")
	since := limited.Mark()
	rated.Mark()
	t.Logf("broker's app restarted in %v, while %d jobs of the limited queue held tokens", since.Sub(down).Round(time.Millisecond), held)

	eventually(t, "both workers run jobs of both queues after the restart", func() bool {
		return limited.WorkersAfter(since, workers...) && rated.WorkersAfter(since, workers...)
	})
	// Every token is back and usable: 7 jobs begun after the restart run
	// at once, and the rate's jobs go on starting.
	eventually(t, "7 jobs of the limited queue begun after the restart run at once", func() bool {
		return limited.Stats().MaxAfter >= restartLimit
	})
	eventually(t, "15 jobs of the rate queue begun after the restart", func() bool {
		return len(rated.BegunAfter(since)) >= 3*restartRate
	})
	// While jobs run, the limit's token queue holds 7 tokens, ready or
	// held, as the management API counts them on its next tick.
	var ready, unacked int
	err = poll.Poll(wait, func() error {
		var err error
		ready, unacked, err = brokertest.Counts(ctx, lnames.LimitTokens)
		if err == nil && ready+unacked != restartLimit {
			err = fmt.Errorf("%d ready and %d held, want %d in all", ready, unacked, restartLimit)
		}
		return err
	})
	if err != nil {
		t.Errorf("token queue %s while jobs run, by the management API: %v", lnames.LimitTokens, err)
	}
	after, rateBegins := limited.Stats(), rated.BegunAfter(since)
	for _, stop := range stops {
		stop()
	}
	t.Logf("limited queue: %v", after)
	if after.MaxAfter > restartLimit {
		t.Errorf("after the restart %d jobs begun after it ran at once, want at most %d", after.MaxAfter, restartLimit)
	}
	if after.MaxRunning > restartLimit {
		// Jobs begun before the restart run on without their tokens,
		// which the broker took back with their connections.
		t.Logf("%d jobs ran at once across the restart: those begun before it ran on without their tokens", after.MaxRunning)
	}
	// At most 5 starts in any second as the broker times them: in a span
	// of the workers' time, 5 for each second begun, and 5 more for the
	// skew of the workers' clock of grants against the broker's.
	span := rateBegins[len(rateBegins)-1].At.Sub(since)
	periods := int(span/time.Second) + 1
	t.Logf("rate queue: %d jobs begun in the %v after the restart", len(rateBegins), span.Round(time.Millisecond))
	if bound := restartRate * (periods + 1); len(rateBegins) > bound {
		t.Errorf("%d jobs of the rate queue began in the %v after the restart: more than %d per second allow (%d)", len(rateBegins), span, restartRate, bound)
	}

	// At rest, with every worker gone, the tokens are all ready: exactly
	// the limit, and the ledger says so.
	tokensAtRest(t, url, lnames.LimitTokens, lnames.LimitLedger, "", restartLimit)
	tokensAtRest(t, url, rnames.RateTokens, rnames.RateLedger, rnames.RateReturn, restartRate)
}

// tokensAtRest checks, with no worker left, that token queue tokens holds
// want tokens (once return queue ret, if any, has given back the rate's
// spent ones) and that ledger counts want.
func tokensAtRest(t *testing.T, url, tokens, ledger, ret string, want int) {
	t.Helper()
	var n, back int
	err := poll.Poll(wait, func() error {
		var err error
		if n, err = brokertest.Ready(url, tokens); err != nil {
			return err
		}
		if ret != "" {
			if back, err = brokertest.Ready(url, ret); err != nil {
				return err
			}
		}
		if back != 0 || n != want {
			return fmt.Errorf("%s holds %d tokens and %s %d, want %d and 0", tokens, n, ret, back, want)
		}
		return nil
	})
	if err != nil {
		t.Errorf("tokens at rest: %v", err)
	}
	count, msgs, err := brokertest.ReadLedger(url, ledger)
	switch {
	case err != nil:
		t.Errorf("ledger: %v", err)
	case count != want || msgs != 1:
		t.Errorf("ledger %s holds %d messages counting %d, want one counting %d", ledger, msgs, count, want)
	default:
		t.Logf("%s: %d tokens, and its ledger says %d", tokens, n, count)
	}
}

// limitedQueue returns the config of a queue of type typ of its own; it
// and every queue of its limits are deleted when t ends.
func limitedQueue(t *testing.T, url string, typ runtime.QueueType, what string) runtime.QueueConfig {
	t.Helper()
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	q := runtime.DefaultQueueConfig(fmt.Sprintf("queuey-faults.limits.%s.%s.%s", typ, what, hex.EncodeToString(buf[:])))
	q.Kind, q.QueueType = runtime.KindOf[job](), typ
	q.Prefetch, q.Concurrency = 10, 10
	if typ == runtime.QueueQuorum {
		q.MaxPriority = runtime.NoPriority
	}
	t.Cleanup(func() {
		brokertest.DeleteQueues(url, append([]string{q.Name, q.Name + ".dead"}, brokertest.LimitQueuesOf(q.Name).All()...)...)
	})
	return q
}

// work is a handler that runs for d, recorded in runs as worker's.
func work(runs *brokertest.Runs, worker string, d time.Duration) func(context.Context, job) error {
	return func(ctx context.Context, _ job) error {
		defer runs.Begin(worker)()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
