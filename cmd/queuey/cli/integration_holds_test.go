package cli_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/runtime"
)

// TestBrokerDeleteKeepsLookalikes: a work queue that another program
// declared as "Q.retry.1000" (a valid name, with its own jobs) beside
// real hold queues of Q is not a hold queue of Q: queues does not count
// its jobs as Q's waiting, and delete --with-waits deletes Q, Q.dead and
// Q's real hold queues, keeps it with its 5 jobs, and says so.
func TestBrokerDeleteKeepsLookalikes(t *testing.T) {
	bq := newBrokerQueue(t)
	q := bq.q.Name
	ch := rawChannel(t, bq.url)
	lookalike, retryHold := q+".retry.1000", q+".retry.5000"
	deferHolds := []string{q + ".deferred.3600000", q + ".deferred.7200000"}
	t.Cleanup(func() {
		conn, err := amqp.Dial(bq.url)
		if err != nil {
			return
		}
		defer conn.Close()
		for _, name := range append([]string{lookalike, lookalike + ".dead", retryHold}, deferHolds...) {
			if c, err := conn.Channel(); err == nil {
				_, _ = c.QueueDelete(name, false, false, false)
				c.Close()
			}
		}
	})
	// The look-alike, declared as queuey declares a work queue: it
	// dead-letters to its own dead-letter queue.
	if _, err := ch.QueueDeclare(lookalike, true, false, false, false, amqp.Table{
		"x-queue-type": "classic", "x-max-priority": int32(10),
		"x-dead-letter-exchange": "", "x-dead-letter-routing-key": lookalike + ".dead",
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(lookalike+".dead", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	publish := func(queue string, body []byte) {
		t.Helper()
		c, err := ch.PublishWithDeferredConfirmWithContext(ctxT(t), "", queue, true, false, amqp.Publishing{Body: body})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := c.WaitContext(ctxT(t)); !ok || err != nil {
			t.Fatalf("publish to %s: confirmed %v, %v", queue, ok, err)
		}
	}
	for i := range 5 {
		publish(lookalike, []byte{byte(i)})
	}
	// Real hold queues of q: two deferrals, made by enqueues, and a retry
	// hold declared as the backend declares one.
	for _, d := range []time.Duration{time.Hour, 2 * time.Hour} {
		if _, err := runtime.Enqueue(ctxT(t), bq.p, bq.q, job{N: 1}, runtime.WithDelay(d)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ch.QueueDeclare(retryHold, true, false, false, false, amqp.Table{
		"x-queue-type": "classic", "x-message-ttl": int32(5000), "x-expires": int64(10000),
		"x-dead-letter-exchange": "", "x-dead-letter-routing-key": q,
	}); err != nil {
		t.Fatal(err)
	}
	publish(retryHold, []byte("held"))
	if n := queueDepth(t, ch, lookalike); n != 5 {
		t.Fatalf("look-alike holds %d, want 5", n)
	}

	r := bq.cli(ctxT(t), cli.Env{}, "--json", "queues", q)
	var rows []queueJSON
	if err := json.Unmarshal([]byte(r.out), &struct{ Queues *[]queueJSON }{&rows}); r.code != 0 || err != nil || len(rows) != 1 {
		t.Fatalf("queues --json %s: exit %d, %v\n%s%s", q, r.code, err, r.out, r.err)
	}
	// The retry hold's message may have returned to q by now (5 s): 2 or 3.
	if w := rows[0].Waiting; w == nil || *w < 2 || *w > 3 {
		t.Errorf("queues %s: %d waiting, want the 2 or 3 of its hold queues, not the look-alike's 5:\n%s", q, w, r.out)
	}
	st, err := bq.b.QueueStats(ctxT(t), admin.Queue{Name: q})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st[0].Holds {
		if h.Name == lookalike {
			t.Errorf("QueueStats lists %s among the hold queues of %s: %+v", lookalike, q, st[0].Holds)
		}
	}
	if names, err := bq.b.Queues(ctxT(t)); err != nil || !slices.Contains(names, lookalike) {
		t.Errorf("Queues = %v, %v; want %s, a queue of its own with its dead-letter queue", names, err, lookalike)
	}

	r = bq.cli(ctxT(t), cli.Env{}, "--json", "queues", "delete", q, "--with-waits", "--yes")
	var del struct {
		Deleted []admin.DeletedQueue
		Kept    []admin.KeptQueue
	}
	if err := json.Unmarshal([]byte(r.out), &del); r.code != 0 || err != nil {
		t.Fatalf("queues delete --with-waits: exit %d, %v\n%s%s", r.code, err, r.out, r.err)
	}
	var deleted []string
	for _, d := range del.Deleted {
		deleted = append(deleted, d.Name)
	}
	for _, name := range append([]string{q, q + ".dead", retryHold}, deferHolds...) {
		if !slices.Contains(deleted, name) {
			t.Errorf("delete --with-waits deleted %v; want %s among them", deleted, name)
		}
	}
	if slices.Contains(deleted, lookalike) || len(del.Kept) != 1 || del.Kept[0].Name != lookalike || del.Kept[0].Jobs != 5 ||
		!strings.Contains(del.Kept[0].Why, "x-dead-letter-routing-key") {
		t.Errorf("delete --with-waits: deleted %v, kept %+v; want %s kept with its 5 jobs, and why", deleted, del.Kept, lookalike)
	}
	if n := queueDepth(t, rawChannel(t, bq.url), lookalike); n != 5 {
		t.Errorf("after delete --with-waits of %s, %s holds %d jobs, want its 5", q, lookalike, n)
	}
	for _, name := range append([]string{q, q + ".dead", retryHold}, deferHolds...) {
		if _, err := rawChannel(t, bq.url).QueueDeclarePassive(name, true, false, false, false, nil); err == nil {
			t.Errorf("%s still exists after delete --with-waits", name)
		}
	}

	// The table says so too.
	if _, err := runtime.NewProducer(ctxT(t), bq.b, bq.q); err != nil {
		t.Fatal(err)
	}
	r = bq.cli(ctxT(t), cli.Env{}, "queues", "delete", q, "--with-waits", "--yes")
	line := "kept queue " + lookalike + " with 5 jobs: not a hold queue of \"" + q + "\": its x-dead-letter-routing-key is " + lookalike + ".dead"
	if r.code != 0 || !strings.Contains(r.out, line) {
		t.Errorf("queues delete --with-waits: exit %d; want the line %q in:\n%s%s", r.code, line, r.out, r.err)
	}
}
