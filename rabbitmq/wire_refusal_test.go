package rabbitmq_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// foreign is a message a producer in another language publishes, and the
// reason a worker must give when it refuses it ("" for a job it runs).
type foreign struct {
	name   string
	msg    amqp.Publishing
	reason string
}

// envelopeBody is a format 1 body: the envelope's fields, written by
// msgpack as any producer might, then payload as it is.
func envelopeBody(t *testing.T, attempt, maxAttempts, priority int, queue string, headers map[string]string, payload []byte) []byte {
	t.Helper()
	var h any
	if headers != nil {
		h = headers
	}
	b, err := msgpack.Marshal([]any{attempt, maxAttempts, priority, time.Now().UnixNano(), queue, "", h})
	if err != nil {
		t.Fatal(err)
	}
	return append(b, payload...)
}

// invalidVectors are the messages of testdata/wire/invalid, as a foreign
// producer would publish them to queue, each with the reason a worker
// gives.
func invalidVectors(t *testing.T, queue string) []foreign {
	t.Helper()
	files, err := filepath.Glob("../testdata/wire/invalid/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid vectors: %v", err)
	}
	var out []foreign
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Name       string `json:"name"`
			Properties struct {
				ContentType  string `json:"content_type"`
				MessageID    string `json:"message_id"`
				MessageIDHex string `json:"message_id_hex"`
				Type         string `json:"type"`
				Expiration   string `json:"expiration"`
			} `json:"properties"`
			BodyHex string `json:"body_hex"`
			Reason  string `json:"reason"`
		}
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		body, err := hex.DecodeString(v.BodyHex)
		if err != nil {
			t.Fatal(err)
		}
		p := v.Properties
		id := p.MessageID
		switch {
		case p.MessageIDHex != "":
			b, err := hex.DecodeString(p.MessageIDHex)
			if err != nil {
				t.Fatal(err)
			}
			id = string(b)
		case id != "":
			id = "vector-" + v.Name // one ID each, to find each dead letter
		}
		out = append(out, foreign{
			name:   "invalid/" + v.Name,
			msg:    amqp.Publishing{ContentType: p.ContentType, MessageId: id, Type: p.Type, Expiration: p.Expiration, DeliveryMode: amqp.Persistent, Body: body},
			reason: fmt.Sprintf("message on queue %q is not a valid envelope: %s", queue, v.Reason),
		})
	}
	return out
}

// TestForeignMessagesRefused publishes, through amqp091-go as a producer
// in another language would, every message docs/wire-format.md refuses
// (each invalid test vector; a payload with bytes after its value, a nil
// payload, no payload; a job whose queue field names another queue, one
// of a priority above the queue's max_priority, one with a forged tick
// header) between good jobs, one of which says 9 attempts on a queue of 2
// and always fails. Each refused message lands on q.dead with its reason
// and never reaches the handler; every good job runs, told the queue it
// came from; the failing one runs the queue's 2 times, not 9, and is
// dead-lettered after attempt 2 of 2.
func TestForeignMessagesRefused(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t, ".retry.1000", ".retry.2000"))
	q.Kind = runtime.KindOf[job]()
	q.MaxAttempts = 2
	q.MaxPriority = 3
	q.RetryBase, q.RetryMax = time.Second, time.Second
	q.Prefetch, q.Concurrency = 4, 4
	if err := b.Declare(ctxT(t), q); err != nil {
		t.Fatal(err)
	}
	good := func(n int) []byte {
		p, err := msgpack.Marshal(&job{N: n})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	props := func(id string, body []byte) amqp.Publishing {
		return amqp.Publishing{ContentType: "application/vnd.queuey.envelope+msgpack", MessageId: id, Type: q.Kind, DeliveryMode: amqp.Persistent, Body: body}
	}
	tick := time.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	decode := fmt.Sprintf("decode %s payload: ", q.Kind)
	refused := append(invalidVectors(t, q.Name),
		foreign{"bytes after the payload", props("after", envelopeBody(t, 1, 2, 0, q.Name, nil, append(good(1), 0xc0))), decode + "malformed msgpack: 1 bytes after the value"},
		foreign{"nil payload", props("nil-payload", envelopeBody(t, 1, 2, 0, q.Name, nil, []byte{0xc0})), decode + "want rabbitmq_test.job (a map of its fields), found nil"},
		foreign{"no payload", props("no-payload", envelopeBody(t, 1, 2, 0, q.Name, nil, nil)), decode + "malformed msgpack at byte 0"},
		foreign{"queue field of another queue", props("other-queue", envelopeBody(t, 1, 2, 0, "billing.other", nil, good(1))),
			fmt.Sprintf(`job "other-queue" on queue %q: its queue field names queue "billing.other": a job names the queue it is published to`, q.Name)},
		foreign{"priority above max_priority", props("priority-9", envelopeBody(t, 1, 2, 9, q.Name, nil, good(1))),
			fmt.Sprintf(`job "priority-9" on queue %q: priority 9, above the queue's max_priority=3`, q.Name)},
		foreign{"forged tick", props("forged-tick", envelopeBody(t, 1, 2, 0, q.Name, map[string]string{runtime.HeaderTick: tick}, good(1))),
			fmt.Sprintf(`job "forged-tick" on queue %q: header "queuey-tick": the job's ID is not <schedule name>@%s`, q.Name, tick)},
	)
	raw := rawChannel(t)
	if err := raw.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for i, f := range refused {
		if err := publishRaw(t, raw, q.Name, props(fmt.Sprintf("good-%d", i), envelopeBody(t, 1, 2, 0, q.Name, nil, good(100+i)))); err != nil {
			t.Fatal(err)
		}
		if err := publishRaw(t, raw, q.Name, f.msg); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
	}
	if err := publishRaw(t, raw, q.Name, props("nine-attempts", envelopeBody(t, 1, 9, 0, q.Name, nil, good(-1)))); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	runs := map[int][]runtime.Info{}
	ran := make(chan int, 100)
	runWorker(t, b, q, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		mu.Lock()
		runs[j.N] = append(runs[j.N], info)
		mu.Unlock()
		ran <- j.N
		if j.N == -1 {
			return errors.New("always fails")
		}
		return nil
	})
	seen := map[int]bool{}
	for len(seen) < len(refused) {
		if n := within(t, ran, fmt.Sprintf("good job %d of %d", len(seen)+1, len(refused))); n >= 100 {
			seen[n] = true
		}
	}
	letters := deadLetters(t, b, q.Name, len(refused)+1)
	byID := map[string]string{}
	for _, dl := range letters {
		byID[dl.ID] = dl.Reason
		if dl.ID == "nine-attempts" && (dl.Attempt != 2 || dl.MaxAttempts != 2) {
			t.Errorf("the failing job died after attempt %d of %d, want 2 of 2", dl.Attempt, dl.MaxAttempts)
		}
	}
	for _, f := range refused {
		id := f.msg.MessageId
		if id == "" {
			// A message with no ID is listed under an ID made for it;
			// find it by its reason.
			for k, r := range byID {
				if r == f.reason {
					id = k
				}
			}
		}
		got, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("%s: not in the dead-letter queue (dead letters: %v)", f.name, byID)
		case !strings.HasPrefix(got, f.reason):
			t.Errorf("%s: dead with reason %q, want it to start %q", f.name, got, f.reason)
		}
	}
	if !strings.Contains(byID["nine-attempts"], "always fails") {
		t.Errorf("the failing job: reason %q", byID["nine-attempts"])
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range refused {
		if len(runs[100+i]) != 1 {
			t.Errorf("good job %d ran %d times, want once", i, len(runs[100+i]))
		}
	}
	if len(runs[-1]) != 2 {
		t.Errorf("the failing job ran %d times, want the queue's 2", len(runs[-1]))
	}
	if len(runs[1]) != 0 {
		t.Errorf("a refused job ran %d times: %+v", len(runs[1]), runs[1])
	}
	for n, infos := range runs {
		for _, info := range infos {
			if info.Queue != q.Name || info.MaxAttempts != 2 {
				t.Errorf("job %d told queue %q and max attempts %d, want %q and 2", n, info.Queue, info.MaxAttempts, q.Name)
			}
		}
	}
}
