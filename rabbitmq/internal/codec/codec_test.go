package codec

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/runtime"
)

func sample() *runtime.Envelope {
	return &runtime.Envelope{
		ID:          "0190-job",
		Queue:       "emails.send_email",
		Kind:        "SendEmail",
		Payload:     []byte{0x81, 0xa2, 'T', 'o', 0xa1, 'a'},
		Attempt:     3,
		MaxAttempts: 5,
		Priority:    2,
		EnqueuedAt:  time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
		LastError:   "boom",
		Headers:     map[string]string{"traceparent": "00-abc-def-01", "tenant": "t1"},
	}
}

// deliver turns a publishing into the delivery a consumer would see.
func deliver(p amqp.Publishing) *amqp.Delivery {
	return &amqp.Delivery{
		Headers:      p.Headers,
		ContentType:  p.ContentType,
		DeliveryMode: p.DeliveryMode,
		Priority:     p.Priority,
		MessageId:    p.MessageId,
		Type:         p.Type,
		Timestamp:    p.Timestamp,
		Body:         p.Body,
	}
}

func TestRoundTrip(t *testing.T) {
	for name, env := range map[string]*runtime.Envelope{
		"full": sample(),
		"minimal": {
			ID: "x", Queue: "q", Attempt: 1, MaxAttempts: 1,
		},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := Encode(env, Options{Priority: 9})
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			got, err := Decode(deliver(p))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(env, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodeAppendSharesOneBuffer encodes a batch into one buffer sized by
// BodySize, then into one too small: each body decodes to its envelope,
// none has spare capacity that an append could spill into the next, and
// the small buffer's bodies get buffers of their own.
func TestEncodeAppendSharesOneBuffer(t *testing.T) {
	envs := []*runtime.Envelope{sample(), {ID: "x", Queue: "q", Attempt: 1, MaxAttempts: 1}, sample()}
	envs[2].ID, envs[2].Payload = "third", bytes.Repeat([]byte{0xc0}, 300)
	size := 0
	for _, env := range envs {
		size += BodySize(env)
	}
	for name, buf := range map[string][]byte{"sized": make([]byte, 0, size), "small": make([]byte, 0, 8)} {
		t.Run(name, func(t *testing.T) {
			first := buf[:cap(buf)]
			var msgs []amqp.Publishing
			for _, env := range envs {
				var (
					p   amqp.Publishing
					err error
				)
				p, buf, err = EncodeAppend(buf, env, Options{})
				if err != nil {
					t.Fatalf("EncodeAppend(%s): %v", env.ID, err)
				}
				if len(p.Body) != cap(p.Body) {
					t.Errorf("body of %s: len %d, cap %d; want no spare capacity", env.ID, len(p.Body), cap(p.Body))
				}
				msgs = append(msgs, p)
			}
			for i, p := range msgs {
				got, err := Decode(deliver(p))
				if err != nil {
					t.Fatalf("Decode(%s): %v", envs[i].ID, err)
				}
				if diff := cmp.Diff(envs[i], got); diff != "" {
					t.Errorf("round trip of %s (-want +got):\n%s", envs[i].ID, diff)
				}
			}
			shared := &msgs[0].Body[0] == &first[0] && &msgs[2].Body[0] == &first[len(msgs[0].Body)+len(msgs[1].Body)]
			if want := name == "sized"; shared != want {
				t.Errorf("bodies in the given buffer: %v, want %v", shared, want)
			}
		})
	}
}

func TestEncodeProperties(t *testing.T) {
	env := sample()
	p, err := Encode(env, Options{Priority: 10})
	if err != nil {
		t.Fatal(err)
	}
	if p.ContentType != ContentType || p.DeliveryMode != amqp.Persistent || p.MessageId != env.ID || p.Type != env.Kind {
		t.Errorf("properties = content type %q, mode %d, id %q, type %q", p.ContentType, p.DeliveryMode, p.MessageId, p.Type)
	}
	if p.Priority != 10 {
		t.Errorf("wire priority = %d, want 10 (the option, not the job's own)", p.Priority)
	}
	if !p.Timestamp.Equal(env.EnqueuedAt) {
		t.Errorf("timestamp = %v, want %v", p.Timestamp, env.EnqueuedAt)
	}
	if p.Headers != nil {
		t.Errorf("headers = %v, want none: the envelope's fields travel in the body", p.Headers)
	}
	if !bytes.HasSuffix(p.Body, env.Payload) {
		t.Errorf("body %x does not end with the payload %x", p.Body, env.Payload)
	}
}

func TestEncodeDeadLetterHeaders(t *testing.T) {
	env := sample()
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("CET", 3600))
	p, err := Encode(env, Options{DeadReason: "out of attempts", DeadAt: at})
	if err != nil {
		t.Fatal(err)
	}
	if got := DeadReason(p.Headers); got != "out of attempts" {
		t.Errorf("DeadReason = %q", got)
	}
	if got := DeadAt(p.Headers, env.Queue); !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("DeadAt = %v, want %v in UTC", got, at)
	}
	want := amqp.Table{
		HeaderDeadReason:  "out of attempts",
		HeaderDeadAt:      "2026-03-04T04:06:07.123456789Z",
		HeaderQueue:       env.Queue,
		HeaderAttempt:     int64(3),
		HeaderMaxAttempts: int64(5),
		HeaderLastError:   "boom",
	}
	if diff := cmp.Diff(want, p.Headers); diff != "" {
		t.Errorf("dead letter headers (-want +got):\n%s", diff)
	}
	if err := p.Headers.Validate(); err != nil {
		t.Errorf("headers are not a valid AMQP table: %v", err)
	}
	got, err := Decode(deliver(p))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(env, got); diff != "" {
		t.Errorf("dead letter round trip (-want +got):\n%s", diff)
	}
}

// TestDeadAt: the dead-lettered time is the worker's header, else the
// broker's own dead-lettering from the work queue (not from a hold queue),
// else unknown; a header that does not read as a time is unknown too.
func TestDeadAt(t *testing.T) {
	broker := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", -7200))
	deaths := []any{
		amqp.Table{"queue": "q.retry.1000", "reason": "expired", "time": broker.Add(-time.Hour)},
		amqp.Table{"queue": "q", "reason": "delivery_limit", "time": broker},
	}
	for _, c := range []struct {
		name string
		h    amqp.Table
		want time.Time
	}{
		{"none", nil, time.Time{}},
		{"header", amqp.Table{HeaderDeadAt: "2026-03-04T05:06:07.5Z"}, time.Date(2026, 3, 4, 5, 6, 7, 5e8, time.UTC)},
		{"header over x-death", amqp.Table{HeaderDeadAt: "2026-03-04T05:06:07Z", "x-death": deaths}, time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)},
		{"x-death from the work queue", amqp.Table{"x-death": deaths}, broker.UTC()},
		{"x-death from hold queues only", amqp.Table{"x-death": deaths[:1]}, time.Time{}},
		{"not a time", amqp.Table{HeaderDeadAt: "yesterday", "x-death": deaths}, time.Time{}},
		{"not a string", amqp.Table{HeaderDeadAt: int64(5)}, time.Time{}},
	} {
		got := DeadAt(c.h, "q")
		if !got.Equal(c.want) || (!got.IsZero() && got.Location() != time.UTC) {
			t.Errorf("%s: DeadAt = %v, want %v in UTC", c.name, got, c.want)
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	for name, mut := range map[string]func(*runtime.Envelope){
		"empty id":     func(e *runtime.Envelope) { e.ID = "" },
		"empty queue":  func(e *runtime.Envelope) { e.Queue = "" },
		"attempt zero": func(e *runtime.Envelope) { e.Attempt = 0 },
		"max zero":     func(e *runtime.Envelope) { e.MaxAttempts = 0 },
	} {
		env := sample()
		mut(env)
		if _, err := Encode(env, Options{}); err == nil {
			t.Errorf("%s: Encode succeeded, want an error", name)
		}
	}
	if _, err := Encode(nil, Options{}); err == nil {
		t.Error("Encode(nil) succeeded")
	}
}

// body is a body of ContentType whose fields are fs, then payload.
func body(payload []byte, fs ...any) []byte {
	b, err := msgpack.Marshal(fs)
	if err != nil {
		panic(err)
	}
	return append(b, payload...)
}

func TestDecodeErrors(t *testing.T) {
	good := func() *amqp.Delivery {
		p, err := Encode(sample(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return deliver(p)
	}
	withBody := func(b []byte) func(*amqp.Delivery) { return func(d *amqp.Delivery) { d.Body = b } }
	p := []byte{0x80}
	for _, tc := range []struct {
		name string
		mut  func(*amqp.Delivery)
		want string
	}{
		{"wrong content type", func(d *amqp.Delivery) { d.ContentType = "text/plain" }, `content type "text/plain"`},
		{"no content type", func(d *amqp.Delivery) { d.ContentType = "" }, `content type ""`},
		{"empty id", func(d *amqp.Delivery) { d.MessageId = "" }, "empty message id"},
		{"empty body", withBody(nil), "body does not start with the envelope's fields"},
		{"payload only", withBody(p), "body does not start with the envelope's fields"},
		{"too few fields", withBody(body(p, 1, 1, 0, 0, "q", "")), "6 fields, want at least 7"},
		{"truncated", func(d *amqp.Delivery) { d.Body = d.Body[:5] }, "invalid envelope"},
		{"attempt string", withBody(body(p, "3", 1, 0, 0, "q", "", nil)), "attempt"},
		{"attempt zero", withBody(body(p, 0, 1, 0, 0, "q", "", nil)), "attempt = 0"},
		{"max zero", withBody(body(p, 1, 0, 0, 0, "q", "", nil)), "max attempts = 0"},
		{"priority too big", withBody(body(p, 1, 1, 256, 0, "q", "", nil)), "priority = 256"},
		{"enqueued float", withBody(body(p, 1, 1, 0, 1.5, "q", "", nil)), "enqueued at"},
		{"queue empty", withBody(body(p, 1, 1, 0, 0, "", "", nil)), "queue is empty"},
		{"queue int", withBody(body(p, 1, 1, 0, 0, 7, "", nil)), "queue"},
		{"last error int", withBody(body(p, 1, 1, 0, 0, "q", 1, nil)), "last error"},
		{"headers list", withBody(body(p, 1, 1, 0, 0, "q", "", []string{"a"})), "headers"},
		{"header value int", withBody(body(p, 1, 1, 0, 0, "q", "", map[string]any{"a": 1})), `header "a"`},
		{"huge header count", withBody([]byte{0x97, 1, 1, 0, 0, 0xa1, 'q', 0xa0, 0xdf, 0xff, 0xff, 0xff, 0xff}), "entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := good()
			tc.mut(d)
			env, err := Decode(d)
			if err == nil {
				t.Fatalf("Decode succeeded with %+v, want an error", env)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := Decode(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Decode(nil) = %v, want ErrInvalid", err)
	}
}

// TestDecodeSkipsLaterFields: a body with more fields than this format
// knows, as a later one may write, still decodes.
func TestDecodeSkipsLaterFields(t *testing.T) {
	payload := []byte{0x81, 0xa1, 'a', 0x01}
	d := &amqp.Delivery{ContentType: ContentType, MessageId: "id", Type: "k",
		Body: body(payload, 2, 3, 4, 5, "q", "e", map[string]string{"h": "v"}, "later", []int{1, 2})}
	env, err := Decode(d)
	if err != nil {
		t.Fatal(err)
	}
	want := &runtime.Envelope{ID: "id", Kind: "k", Queue: "q", Payload: payload, Attempt: 2, MaxAttempts: 3, Priority: 4,
		EnqueuedAt: time.Unix(0, 5).UTC(), LastError: "e", Headers: map[string]string{"h": "v"}}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// FuzzDecode proves that no body panics the decoder, and that whatever it
// accepts encodes back to the same envelope.
func FuzzDecode(f *testing.F) {
	good, err := Encode(sample(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good.Body, "id")
	f.Add(body([]byte{0xc0}, 1, 1, 0, -5, "q", "", nil), "id")
	f.Add([]byte{0x97}, "id")
	f.Add([]byte{}, "")
	f.Fuzz(func(t *testing.T, b []byte, id string) {
		d := &amqp.Delivery{ContentType: ContentType, MessageId: id, Body: b}
		env, err := Decode(d)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		p, err := Encode(env, Options{})
		if err != nil {
			if errors.Is(err, ErrTooLong) || env.Attempt > math.MaxInt32 {
				return
			}
			t.Fatalf("decoded envelope does not encode: %v", err)
		}
		again, err := Decode(deliver(p))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if diff := cmp.Diff(env, again); diff != "" {
			t.Fatalf("decode/encode/decode differs (-first +second):\n%s", diff)
		}
	})
}

func TestEncodeRefusesOverlongShortStrings(t *testing.T) {
	long := strings.Repeat("a", 300)
	for _, tc := range []struct {
		field string
		mod   func(e *runtime.Envelope)
		n     int
	}{
		{"ID", func(e *runtime.Envelope) { e.ID = long }, 300},
		{"kind", func(e *runtime.Envelope) { e.Kind = long }, 300},
		{"queue name", func(e *runtime.Envelope) { e.Queue = long }, 300},
	} {
		t.Run(tc.field, func(t *testing.T) {
			env := sample()
			tc.mod(env)
			_, err := Encode(env, Options{})
			if !errors.Is(err, ErrTooLong) {
				t.Fatalf("Encode = %v, want ErrTooLong", err)
			}
			for _, want := range []string{tc.field, itoa(tc.n) + " bytes"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
	// 255 bytes fit.
	env := sample()
	env.ID, env.Kind = strings.Repeat("i", 255), strings.Repeat("k", 255)
	// Header names travel in the body: no short-string limit.
	env.Headers = map[string]string{strings.Repeat("h", 1000): "v"}
	if _, err := Encode(env, Options{}); err != nil {
		t.Errorf("Encode of 255-byte fields and a long header name: %v", err)
	}
}

func TestCheckPublishing(t *testing.T) {
	long := strings.Repeat("x", 256)
	ok := amqp.Publishing{MessageId: "id", Headers: amqp.Table{"a": amqp.Table{"b": "c"}}}
	if err := CheckPublishing("", "q", &ok, Limits{}); err != nil {
		t.Fatalf("CheckPublishing of a good publish: %v", err)
	}
	for name, tc := range map[string]struct {
		exchange, key string
		msg           amqp.Publishing
	}{
		"exchange name":  {exchange: long, key: "q"},
		"routing key":    {key: long},
		"correlation id": {key: "q", msg: amqp.Publishing{CorrelationId: long}},
		"header name":    {key: "q", msg: amqp.Publishing{Headers: amqp.Table{long: "v"}}},
		"name in header": {key: "q", msg: amqp.Publishing{Headers: amqp.Table{"t": amqp.Table{long: 1}}}},
	} {
		err := CheckPublishing(tc.exchange, tc.key, &tc.msg, Limits{})
		if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "256 bytes") {
			t.Errorf("%s: CheckPublishing = %v, want ErrTooLong naming it and 256 bytes", name, err)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestBrokerDeath: the broker's own dead-lettering of a message from a
// queue is read from x-death, as RabbitMQ 4.0.5 writes it; a death from
// another queue, or none, is not taken for one.
func TestBrokerDeath(t *testing.T) {
	h := amqp.Table{"x-death": []any{amqp.Table{"count": int64(2), "exchange": "", "queue": "q", "reason": "delivery_limit", "routing-keys": []any{"q"}}}}
	if reason, count, ok := BrokerDeath(h, "q"); !ok || reason != "delivery_limit" || count != 2 {
		t.Errorf("BrokerDeath = %q, %d, %v; want delivery_limit, 2, true", reason, count, ok)
	}
	if _, _, ok := BrokerDeath(h, "other"); ok {
		t.Error("a death from another queue was taken for one from this queue")
	}
	if _, _, ok := BrokerDeath(amqp.Table{}, "q"); ok {
		t.Error("no x-death was taken for a death")
	}
}
