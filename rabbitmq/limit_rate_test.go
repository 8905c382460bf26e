package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// rateSlack is how much closer than Rate.Per the test lets the N+1st
// grant come to the first, as the client times them: a token is back
// Per after the broker enqueued it into the return queue, and the grant
// that spent it reaches the client once the commit is done, which takes
// a round trip and the commit's disk write (tens of milliseconds on
// RabbitMQ 4) and, on a loaded machine, more. A rate not kept (tokens
// not spent, or minted twice) packs 2N grants into a few milliseconds.
const rateSlack = 250 * time.Millisecond

// TestRatePermits: workers that take permits of a queue with a Rate of
// 20/s as fast as they can get no more than 20 in any second, and about
// 20 a second over three; every token is back afterwards.
func TestRatePermits(t *testing.T) {
	for _, typ := range queueTypes {
		t.Run(string(typ), func(t *testing.T) {
			const n, per, run = 20, time.Second, 3 * time.Second
			q := limitedQueue(t, typ, 0, runtime.Rate{N: n, Per: per})
			bs := dialN(t, 3)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var (
				mu     sync.Mutex
				grants []time.Time
				wg     sync.WaitGroup
			)
			errs := make(chan error, 12)
			for i := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						p, err := bs[i%len(bs)].AcquirePermit(ctx, q, "")
						if err != nil {
							if !errors.Is(err, context.Canceled) {
								errs <- err
							}
							return
						}
						now := time.Now()
						p.(runtime.PermitStarter).Started()
						p.Release()
						mu.Lock()
						grants = append(grants, now)
						done := now.Sub(grants[0]) > run+per/2
						mu.Unlock()
						if done {
							cancel()
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			slices.SortFunc(grants, func(a, b time.Time) int { return a.Compare(b) })
			closest := time.Duration(1<<63 - 1)
			for i := n; i < len(grants); i++ {
				closest = min(closest, grants[i].Sub(grants[i-n]))
			}
			if os.Getenv("QUEUEY_TEST_LIMIT_LOG") != "" {
				for _, g := range grants {
					t.Logf("grant at %v", g.Sub(grants[0]).Round(time.Millisecond))
				}
			}
			t.Logf("%d grants; the closest %d apart spanned %v", len(grants), n+1, closest)
			if closest < per-rateSlack {
				t.Fatalf("%d grants within %v, want at most %d in any %v", n+1, closest, n, per)
			}
			// At most N at the start of each period: those of the first
			// three periods come before the fourth's, which may come up to
			// rateSlack early; on a loaded machine, at least two thirds of
			// them come in time.
			in := 0
			for _, g := range grants {
				if g.Sub(grants[0]) < run-rateSlack {
					in++
				}
			}
			if in > n*int(run/per) || in < 2*n*int(run/per)/3 {
				t.Fatalf("%d grants in the first %v, want about %d", in, run-rateSlack, n*int(run/per))
			}
			_, _, rateToken, rateLedger, _ := limitQueuesOf(q)
			eventually.True(t, wait, func() bool { return ready(t, rateToken) == n }, "every rate token back")
			if got := ledger(t, rateLedger); got != n {
				t.Fatalf("rate ledger = %d, want %d", got, n)
			}
		})
	}
}

// TestRateReturnQueueDeleted: a rate's return queue deleted by hand loses
// the tokens in it, and no more: the next spend's publish comes back
// unroutable, its token goes back into the token queue, and the return
// queue is declared again, so starts go on with the tokens left.
func TestRateReturnQueueDeleted(t *testing.T) {
	const n = 3
	q := limitedQueue(t, runtime.QueueClassic, 0, runtime.Rate{N: n, Per: time.Second})
	b := dialN(t, 1)[0]
	acquire(t, b, q, "").Release() // one token waits out its second in the return queue
	_, _, token, _, all := rabbitmq.LimitQueues(q.Name)
	ret := all[6] // the return queue of a second
	deleteQueues(ret)
	// The tokens left are spent one after another; each spend after the
	// deletion must land, or come back into the token queue.
	for range 2 * (n - 1) {
		acquire(t, b, q, "").Release()
	}
	eventually.True(t, wait, func() bool { return ready(t, token) == n-1 }, fmt.Sprintf("%d tokens back in %q", n-1, token))
	if got := ready(t, token) + ready(t, ret); got != n-1 {
		t.Fatalf("%d tokens after the return queue was deleted with one in it, want %d", got, n-1)
	}
}
