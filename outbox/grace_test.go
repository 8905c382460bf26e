package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/outbox"
	"github.com/queuey/queuey/runtime"
)

// TestMissingQueueGrace: a job whose queue is declared only after the
// relay first tried it (as when producers ship before the workers) is
// tried again and published, not moved aside; meanwhile it holds back no
// job of another queue.
func TestMissingQueueGrace(t *testing.T) {
	pool, _ := database(t)
	b := dial(t)
	other := testQueue(t)
	declare(t, b, other)
	hOther := newHandled()
	brokertest.RunWorker(t, b, other, hOther.handler)

	late := testQueue(t)
	late.Name += ".late"
	lateID := enqueue(t, pool, late, 1, true)
	lateDelayed := enqueue(t, pool, late, 2, true, runtime.WithDelay(time.Second))
	brokertest.Run(t, &outbox.Relay{Pool: pool, Backend: b, Logger: quiet(), MissingQueueGrace: time.Hour})

	// The relay tried both and set them apart.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	eventually.Nil(t, wait, func() error {
		var tried int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM queuey_outbox WHERE attempts > 0 AND last_error LIKE '%does not exist%'").Scan(&tried); err != nil {
			t.Fatal(err)
		}
		if tried != 2 {
			return fmt.Errorf("%d of the 2 jobs of the missing queue tried and set apart", tried)
		}
		return nil
	}, "the missing queue's jobs tried and set apart")
	// Jobs of another queue go meanwhile, many of them, each at once.
	for i := range 20 {
		id := enqueue(t, pool, other, i, true)
		hOther.waitDistinct(t, i+1)
		if hOther.snapshot()[id] != 1 {
			t.Fatalf("job %q of another queue not handled", id)
		}
	}

	st, err := outbox.StatsReader(pool).OutboxStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// (The last job of the other queue may still be pending: the
	// relay deletes a row after the broker confirmed it.)
	i := slices.IndexFunc(st.Queues, func(q admin.OutboxQueueStats) bool { return q.Queue == late.Name })
	if st.Retrying != 2 || st.OldestAge <= 0 || i < 0 || st.Queues[i].Pending != 2 || st.Queues[i].Retrying != 2 || !strings.Contains(st.Queues[i].LastError, "does not exist") {
		t.Fatalf("stats %+v: want the 2 jobs of %q pending and retrying, with the error", st, late.Name)
	}

	declare(t, b, late)
	hLate := newHandled()
	brokertest.RunWorker(t, b, late, hLate.handler)
	hLate.waitDistinct(t, 2)
	if got := hLate.snapshot(); got[lateID] != 1 || got[lateDelayed] != 1 {
		t.Fatalf("handled %v, want both jobs of the late queue", got)
	}
	waitEmpty(t, pool)
	if _, dead := rowsLeft(t, pool); dead != 0 {
		t.Fatalf("%d rows moved aside, want none", dead)
	}
}
