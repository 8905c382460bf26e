package rabbitmq_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// invoice is a job type as this deploy has it; invoiceBefore, the one the
// deploy before it had, whose producers may still be running: Lines[].Qty
// was a string then. The first value msgpack refuses is the one named.
type invoice struct {
	Number string        `msgpack:"number"`
	Lines  []invoiceLine `msgpack:"lines"`
}

type invoiceLine struct {
	SKU string `msgpack:"sku"`
	Qty int64  `msgpack:"qty"`
}

type invoiceBefore struct {
	Number string `msgpack:"number"`
	Lines  []struct {
		SKU string `msgpack:"sku"`
		Qty string `msgpack:"qty"`
	} `msgpack:"lines"`
}

// TestJobOfAnotherShapeGoesDeadNamingTheField: a job whose payload an
// older producer wrote with a field of another type goes to q.dead on its
// first run, the handler never running it, and the dead letter's
// x-queuey-dead-reason header names the job, the queue, the field by Go
// name and by msgpack key, the type wanted and the value found; the
// admin API reads the same reason. A job of this deploy's shape behind it
// runs.
func TestJobOfAnotherShapeGoesDeadNamingTheField(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind = runtime.KindOf[invoice]()
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	old := invoiceBefore{Number: "INV-1"}
	old.Lines = make([]struct {
		SKU string `msgpack:"sku"`
		Qty string `msgpack:"qty"`
	}, 2)
	old.Lines[0].SKU, old.Lines[0].Qty = "a", "two dozen"
	old.Lines[1].SKU, old.Lines[1].Qty = "b", "1"
	payload, err := msgpack.Marshal(&old)
	if err != nil {
		t.Fatal(err)
	}
	raw := rawChannel(t)
	if err := raw.Confirm(false); err != nil {
		t.Fatal(err)
	}
	if err := publishRaw(t, raw, q.Name, amqp.Publishing{ContentType: codec.ContentType, MessageId: "inv-old", Type: q.Kind, DeliveryMode: amqp.Persistent,
		Body: envelopeBody(t, 1, 5, 0, q.Name, nil, payload)}); err != nil {
		t.Fatal(err)
	}
	goodID, err := runtime.Enqueue(ctxT(t), p, q, invoice{Number: "INV-2", Lines: []invoiceLine{{"a", 1}}})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 4)
	runWorker(t, b, q, func(_ context.Context, inv invoice) error { ran <- inv.Number; return nil })
	if n := within(t, ran, "the job of this deploy's shape"); n != "INV-2" {
		t.Fatalf("handler ran %s first, want INV-2 (%s) alone", n, goodID)
	}

	want := fmt.Sprintf(`decode rabbitmq_test.invoice payload: field "Lines[0].Qty" (msgpack key "lines[0].qty"): want int64, found string "two dozen" (job "inv-old" on queue %q)`, q.Name)
	m := getWithin(t, raw, q.Name+".dead")
	if reason, _ := m.Headers[codec.HeaderDeadReason].(string); reason != want {
		t.Errorf("dead letter %s: %s header\n got %q\nwant %q", m.MessageId, codec.HeaderDeadReason, reason, want)
	}
	if attempt := m.Headers[codec.HeaderAttempt]; fmt.Sprint(attempt) != "1" {
		t.Errorf("dead after attempt %v, want 1: retrying cannot help", attempt)
	}
	// Back where the admin API reads it.
	if err := publishRaw(t, raw, q.Name+".dead", amqp.Publishing{ContentType: m.ContentType, MessageId: m.MessageId, Type: m.Type, Headers: m.Headers, DeliveryMode: amqp.Persistent, Body: m.Body}); err != nil {
		t.Fatal(err)
	}
	letters := deadLetters(t, b, q.Name, 1)
	if letters[0].ID != "inv-old" || letters[0].Reason != want || !strings.Contains(letters[0].LastError, "Lines[0].Qty") {
		t.Errorf("admin dead letter %+v, want inv-old with reason %q", letters[0], want)
	}
	select {
	case n := <-ran:
		t.Errorf("handler ran %s too", n)
	default:
	}
}
