package outbox_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/queuey/queuey/outbox"
)

// fillBacklog is 100,000 pending rows over 10 queues, one in five waiting
// for another try with an error of some 150 bytes.
const fillBacklog = `INSERT INTO queuey_outbox (id, queue, kind, priority, max_attempts, payload, enqueued_at, attempts, failing_since, retry_at, last_error)
SELECT 'job-' || i, 'queue-' || i % 10, 'bench.ping', 0, 5, '\x81a14e01', now(),
	CASE WHEN i / 10 % 5 = 0 THEN 1 ELSE 0 END, CASE WHEN i / 10 % 5 = 0 THEN now() END,
	CASE WHEN i / 10 % 5 = 0 THEN now() + i * interval '1 millisecond' END, CASE WHEN i / 10 % 5 = 0 THEN repeat('x', 140) || ' row ' || i END
FROM generate_series(1, 100000) AS i;
ANALYZE queuey_outbox`

// BenchmarkReadStats measures one ReadStats on a backlog of 100,000
// pending rows (fillBacklog), as a metrics scrape does while the relay is
// down.
func BenchmarkReadStats(b *testing.B) {
	pool, _ := database(b)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, fillBacklog); err != nil {
		b.Fatal(err)
	}
	// The last row of each queue waiting for another try: the one due
	// last, whose error ReadStats shows.
	lastTried := map[string]string{}
	for i := 1; i <= 100000; i++ {
		if i/10%5 == 0 {
			lastTried[fmt.Sprintf("queue-%d", i%10)] = strconv.Itoa(i)
		}
	}
	for b.Loop() {
		st, err := outbox.ReadStats(ctx, pool)
		if err != nil {
			b.Fatal(err)
		}
		if st.Pending != 100000 || st.Retrying != 20000 || len(st.Queues) != 10 {
			b.Fatalf("stats %+v: want the 100,000 rows of fillBacklog", st)
		}
		for _, q := range st.Queues {
			if !strings.HasSuffix(q.LastError, " row "+lastTried[q.Queue]) {
				b.Fatalf("queue %q: last error %q, want that of row %s", q.Queue, q.LastError, lastTried[q.Queue])
			}
		}
	}
}
