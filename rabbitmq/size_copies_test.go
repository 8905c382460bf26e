package rabbitmq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// getWithin takes one message from queue, polling until one is there.
func getWithin(t *testing.T, ch *amqp.Channel, queue string) amqp.Delivery {
	t.Helper()
	var m amqp.Delivery
	if !eventually.Wait(wait, func() bool {
		var ok bool
		var err error
		if m, ok, err = ch.Get(queue, true); err != nil {
			t.Fatal(err)
		}
		return ok
	}) {
		t.Fatalf("no message in %q within %v", queue, wait)
	}
	return m
}

// TestPoisonFillingItsFrameReachesDeadLetters: an invalid message whose
// headers fill its frame is moved to q.dead without them, since with the
// reason added they no longer fit in a frame, and the reason says which
// were dropped and why. The publishing connection stays up, and enqueues
// alongside all succeed.
func TestPoisonFillingItsFrameReachesDeadLetters(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, _ := jobQueue(t, b)
	other, p := jobQueue(t, b)
	pub, _ := rabbitmq.Connections(b)
	frameMax := pub.Config.FrameSize

	msg := amqp.Publishing{MessageId: "poison-big", ContentType: "text/plain", Headers: amqp.Table{"small": "kept", "big": ""}, Body: []byte("not an envelope")}
	msg.Headers["big"] = strings.Repeat("x", frameMax-codec.FrameOverhead-codec.HeaderSize(&msg)-16)
	raw := rawChannel(t)
	if err := raw.Confirm(false); err != nil {
		t.Fatal(err)
	}
	if err := publishRaw(t, raw, q.Name, msg); err != nil {
		t.Fatalf("raw publish of a %d-byte content header: %v", codec.HeaderSize(&msg), err)
	}

	stop := enqueueAlongside(t, p, other, 20)
	runWorker(t, b, q, func(context.Context, job) error { return nil })
	m := getWithin(t, raw, q.Name+".dead")
	enqueued, errs := stop()
	noneFailed(t, enqueued, errs)
	samePublishConnection(t, b, pub)

	if _, ok := m.Headers["big"]; ok {
		t.Error(`dead letter kept header "big"`)
	}
	if m.Headers["small"] != "kept" || m.MessageId != "poison-big" || string(m.Body) != "not an envelope" {
		t.Errorf("dead letter: small header %v, id %q, body %q", m.Headers["small"], m.MessageId, m.Body)
	}
	reason, _ := m.Headers[codec.HeaderDeadReason].(string)
	for _, want := range []string{"not a valid envelope", `"big"`, "dropped", fmt.Sprintf("frame_max %d", frameMax)} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason %q does not say %q", reason, want)
		}
	}
}

// TestDeadLetterOfALargeJob: a job with a header of nearly a frame's size
// and a long last error dead-letters with nothing lost, and is re-driven,
// and the publishing connection stays up.
func TestDeadLetterOfALargeJob(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b)
	pub, _ := rabbitmq.Connections(b)
	big := strings.Repeat("h", 126_000)
	failure := strings.Repeat("e", 5000)

	runs := make(chan runtime.Info, 2)
	runWorker(t, b, q, func(ctx context.Context, _ job) error {
		info, _ := runtime.InfoFromContext(ctx)
		runs <- info
		if info.Headers[admin.HeaderRedrives] == "" {
			return runtime.Permanent(errors.New(failure))
		}
		return nil
	})
	id, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}, runtime.WithHeaders(map[string]string{"big": big}))
	if err != nil {
		t.Fatalf("enqueue of a job with a %d-byte header: %v", len(big), err)
	}
	within(t, runs, "the first run")

	var letter admin.DeadLetterInfo
	if !eventually.Wait(wait, func() bool {
		list, err := b.DeadLetters(ctxT(t), q.Name, admin.DeadLetterPage{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Letters) > 0 {
			letter = list.Letters[0]
		}
		return letter.ID != ""
	}) {
		t.Fatalf("no dead letter within %v", wait)
	}
	if letter.ID != id || letter.Headers["big"] != big || !strings.Contains(letter.LastError, "eeee") || !strings.Contains(letter.Reason, "eeee") {
		t.Errorf("dead letter %q: %d-byte header, last error %.20q, reason %.20q; want job %q with all of it", letter.ID, len(letter.Headers["big"]), letter.LastError, letter.Reason, id)
	}

	res, err := b.RedriveDeadLetters(ctxT(t), q.Name, admin.DeadLetterSelector{All: true}, nil)
	if err != nil || len(res.Moved) != 1 {
		t.Fatalf("re-drive: %+v, %v; want the letter moved", res, err)
	}
	if info := within(t, runs, "the re-driven run"); info.ID != id || info.Headers["big"] != big {
		t.Errorf("re-driven run of %q with a %d-byte header; want %q with it whole", info.ID, len(info.Headers["big"]), id)
	}
	samePublishConnection(t, b, pub)
}
