package rabbitmq_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// page reads the page of queue's dead letters after cursor after.
func page(t *testing.T, b *rabbitmq.Backend, queue, after string, limit int) admin.DeadLetterList {
	t.Helper()
	l, err := b.DeadLetters(ctxT(t), queue, admin.DeadLetterPage{After: after, Limit: limit})
	if err != nil {
		t.Fatalf("DeadLetters after %q: %v", after, err)
	}
	return l
}

// wantPage fails t unless l holds the letters want, in order, with next
// cursor next and total total.
func wantPage(t *testing.T, what string, l admin.DeadLetterList, want []string, next string, total int) {
	t.Helper()
	if !slices.Equal(l.IDs(), want) || l.Next != next || l.Total != total {
		t.Fatalf("%s: %d letters %v…, next %q, total %d; want %d letters %v…, next %q, total %d",
			what, len(l.Letters), l.IDs()[:min(3, len(l.Letters))], l.Next, l.Total, len(want), want[:min(3, len(want))], next, total)
	}
}

// wantLetter fails t unless b shows queue's letter id.
func wantLetter(t *testing.T, b *rabbitmq.Backend, queue, id string) {
	t.Helper()
	info, err := b.DeadLetter(ctxT(t), queue, id)
	if err != nil || info.ID != id || info.Reason != "declined" || info.Queue != queue {
		t.Fatalf("DeadLetter(%s) = %s, reason %q, queue %q, %v", id, info.ID, info.Reason, info.Queue, err)
	}
}

// wantGone fails t unless b says queue has no letter id.
func wantGone(t *testing.T, b *rabbitmq.Backend, queue, id string) {
	t.Helper()
	if _, err := b.DeadLetter(ctxT(t), queue, id); !errors.Is(err, admin.ErrDeadLetterNotFound) {
		t.Fatalf("DeadLetter(%s) = %v, want admin.ErrDeadLetterNotFound", id, err)
	}
}

// addDead publishes one more dead letter with ID id at the tail of q's
// dead-letter queue.
func addDead(t *testing.T, q runtime.QueueConfig, id string) {
	t.Helper()
	ch := rawChannel(t)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	env := &runtime.Envelope{ID: id, Queue: q.Name, Kind: q.Kind, Payload: []byte{0x01}, Attempt: 1, MaxAttempts: q.MaxAttempts, EnqueuedAt: time.Now()}
	msg, err := codec.Encode(env, codec.Options{DeadReason: "declined"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ch.PublishWithDeferredConfirm("", q.Name+".dead", true, false, msg)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.WaitContext(ctxT(t)); !ok || err != nil {
		t.Fatalf("publish of a dead letter not confirmed: %v", err)
	}
}

// TestDeadLetterIndex: with an index, a page deep in a classic dead-letter
// queue and a letter by ID are exactly what the queue holds, in order,
// read after read, while another backend re-drives and purges letters, a
// plain consumer takes the first, and letters arrive; and every letter is
// still in the queue, in its place, after.
func TestDeadLetterIndex(t *testing.T) {
	b := dial(t, rabbitmq.Options{DeadLetterIndex: true})
	other := dial(t, rabbitmq.Options{})
	q, _ := jobQueue(t, b)
	ids := fillDead(t, q, 300)

	for range 2 { // made, then used
		wantPage(t, "page after 200", page(t, b, q.Name, admin.Cursor(200, ids[199]), 50), ids[200:250], admin.Cursor(250, ids[249]), 300)
		wantLetter(t, b, q.Name, ids[299])
		wantPage(t, "last page", page(t, b, q.Name, admin.Cursor(280, ids[279]), 50), ids[280:], "", 300)
		wantPage(t, "page after a plain ID", page(t, b, q.Name, ids[9], 2), ids[10:12], admin.Cursor(12, ids[11]), 300)
	}
	wantGone(t, b, q.Name, "no-such-letter")
	if _, err := b.DeadLetters(ctxT(t), q.Name, admin.DeadLetterPage{After: admin.Cursor(5, "no-such-letter")}); !errors.Is(err, admin.ErrDeadLetterNotFound) {
		t.Fatalf("page after a letter that is not there: %v, want admin.ErrDeadLetterNotFound", err)
	}
	if got := page(t, other, q.Name, "", 1000); !slices.Equal(got.IDs(), ids) {
		t.Fatalf("after the reads the queue holds %d letters %v…, want all %d in order", len(got.Letters), got.IDs()[:min(3, len(got.Letters))], len(ids))
	}

	// Another backend re-drives one letter: the index must not show it.
	res, err := other.RedriveDeadLetters(ctxT(t), q.Name, admin.DeadLetterSelector{IDs: []string{ids[250]}}, nil)
	if err != nil || !slices.Equal(res.Moved, ids[250:251]) {
		t.Fatalf("re-drive = %v, %v", res.Moved, err)
	}
	left := slices.Delete(slices.Clone(ids), 250, 251)
	wantGone(t, b, q.Name, ids[250])
	wantPage(t, "page across the re-driven letter", page(t, b, q.Name, admin.Cursor(249, ids[248]), 3), []string{ids[249], ids[251], ids[252]}, admin.Cursor(252, ids[252]), 299)

	// A letter arrives: it is found, and the last page goes on to it.
	addDead(t, q, "late-letter")
	left = append(left, "late-letter")
	wantLetter(t, b, q.Name, "late-letter")
	wantPage(t, "last page with a letter arrived", page(t, b, q.Name, admin.Cursor(290, left[289]), 50), left[290:], "", 300)
	addDead(t, q, "later-letter")
	left = append(left, "later-letter")
	wantPage(t, "the page past the index", page(t, b, q.Name, admin.Cursor(299, left[298]), 50), left[299:], "", 301)

	// A plain consumer takes the first letter.
	if _, ok, err := rawChannel(t).Get(q.Name+".dead", true); !ok || err != nil {
		t.Fatalf("get: %v, %v", ok, err)
	}
	left = left[1:]
	wantGone(t, b, q.Name, ids[0])
	wantPage(t, "page after a letter taken by another consumer", page(t, b, q.Name, admin.Cursor(1, left[0]), 2), left[1:3], admin.Cursor(3, left[2]), 300)

	if got := page(t, other, q.Name, "", 1000); !slices.Equal(got.IDs(), left) {
		t.Fatalf("after the reads the queue holds %d letters, want %d in order", len(got.Letters), len(left))
	}

	// Another backend purges them all.
	if _, err := other.PurgeDeadLetters(ctxT(t), q.Name, admin.DeadLetterSelector{All: true}); err != nil {
		t.Fatal(err)
	}
	wantGone(t, b, q.Name, ids[299])
}

// TestDeadLetterIndexNotQuorum: a quorum dead-letter queue is read as
// without an index.
func TestDeadLetterIndexNotQuorum(t *testing.T) {
	b := dial(t, rabbitmq.Options{DeadLetterIndex: true})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind, q.QueueType, q.MaxPriority = "job", runtime.QueueQuorum, runtime.NoPriority
	if err := b.Declare(ctxT(t), q); err != nil {
		t.Fatal(err)
	}
	ids := fillDead(t, q, 20)
	wantPage(t, "quorum page", page(t, b, q.Name, admin.Cursor(10, ids[9]), 5), ids[10:15], admin.Cursor(15, ids[14]), 20)
	wantLetter(t, b, q.Name, ids[19])
	var got []string
	for _, d := range takeAll(t, q.Name+".dead") {
		got = append(got, d.MessageId)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("quorum dead-letter queue holds %v, want %v", got, ids)
	}
}
