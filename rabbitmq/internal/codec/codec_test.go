package codec

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

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

func TestEncodeProperties(t *testing.T) {
	env := sample()
	p, err := Encode(env, Options{Priority: 10, DeadReason: "out of attempts"})
	if err != nil {
		t.Fatal(err)
	}
	if p.ContentType != ContentType || p.DeliveryMode != amqp.Persistent || p.MessageId != env.ID || p.Type != env.Kind {
		t.Errorf("properties = content type %q, mode %d, id %q, type %q", p.ContentType, p.DeliveryMode, p.MessageId, p.Type)
	}
	if p.Priority != 10 {
		t.Errorf("wire priority = %d, want 10 (the option, not the job's own)", p.Priority)
	}
	if got := p.Headers[HeaderPriority]; got != int64(2) {
		t.Errorf("job priority header = %v, want 2", got)
	}
	if got := DeadReason(p.Headers); got != "out of attempts" {
		t.Errorf("DeadReason = %q", got)
	}
	if !p.Timestamp.Equal(env.EnqueuedAt) {
		t.Errorf("timestamp = %v, want %v", p.Timestamp, env.EnqueuedAt)
	}
	if got := p.Headers[UserHeaderPrefix+"tenant"]; got != "t1" {
		t.Errorf("user header = %v", got)
	}
	if err := p.Headers.Validate(); err != nil {
		t.Errorf("headers are not a valid AMQP table: %v", err)
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

func TestDecodeErrors(t *testing.T) {
	good := func() *amqp.Delivery {
		p, err := Encode(sample(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return deliver(p)
	}
	for _, tc := range []struct {
		name string
		mut  func(*amqp.Delivery)
		want string
	}{
		{"wrong content type", func(d *amqp.Delivery) { d.ContentType = "text/plain" }, `content type "text/plain"`},
		{"no content type", func(d *amqp.Delivery) { d.ContentType = "" }, `content type ""`},
		{"empty id", func(d *amqp.Delivery) { d.MessageId = "" }, "empty message id"},
		{"no headers", func(d *amqp.Delivery) { d.Headers = nil }, `missing header "x-queuey-attempt"`},
		{"attempt string", func(d *amqp.Delivery) { d.Headers[HeaderAttempt] = "3" }, `header "x-queuey-attempt" is string`},
		{"attempt zero", func(d *amqp.Delivery) { d.Headers[HeaderAttempt] = int32(0) }, `"x-queuey-attempt" = 0`},
		{"max missing", func(d *amqp.Delivery) { delete(d.Headers, HeaderMaxAttempts) }, `missing header "x-queuey-max-attempts"`},
		{"priority too big", func(d *amqp.Delivery) { d.Headers[HeaderPriority] = int64(256) }, `"x-queuey-priority" = 256`},
		{"enqueued float", func(d *amqp.Delivery) { d.Headers[HeaderEnqueuedAt] = 1.5 }, `"x-queuey-enqueued-at" is float64`},
		{"queue missing", func(d *amqp.Delivery) { delete(d.Headers, HeaderQueue) }, `missing header "x-queuey-queue"`},
		{"queue empty", func(d *amqp.Delivery) { d.Headers[HeaderQueue] = "" }, `"x-queuey-queue" is empty`},
		{"last error int", func(d *amqp.Delivery) { d.Headers[HeaderLastError] = int64(1) }, `"x-queuey-last-error" is int64`},
		{"user header bytes", func(d *amqp.Delivery) { d.Headers[UserHeaderPrefix+"x"] = []byte("v") }, `"x-queuey-h-x" is []uint8`},
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

func TestDecodeAcceptsNarrowIntegers(t *testing.T) {
	p, err := Encode(sample(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := deliver(p)
	d.Headers[HeaderAttempt] = int8(4)
	d.Headers[HeaderMaxAttempts] = int16(6)
	d.Headers[HeaderPriority] = uint8(7)
	env, err := Decode(d)
	if err != nil {
		t.Fatal(err)
	}
	if env.Attempt != 4 || env.MaxAttempts != 6 || env.Priority != 7 {
		t.Errorf("got attempt %d of %d, priority %d; want 4 of 6, 7", env.Attempt, env.MaxAttempts, env.Priority)
	}
}

// FuzzDecode proves that no delivery panics the decoder, and that whatever
// it accepts encodes back to the same envelope.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("payload"), ContentType, "id", "q", int64(1), int64(5), int64(0), int64(0), uint8(0), "v")
	f.Add([]byte{}, "", "", "", int64(0), int64(0), int64(-1), int64(1<<62), uint8(255), "")
	f.Add([]byte{0xc1}, ContentType, "id", "q", int64(1<<40), int64(3), int64(300), int64(-5), uint8(7), "x")
	f.Fuzz(func(t *testing.T, body []byte, contentType, id, queue string, attempt, maxAttempts, priority, enqueued int64, shape uint8, extra string) {
		h := amqp.Table{}
		// shape picks which headers are present and how they are typed.
		put := func(bit uint8, name string, v int64) {
			switch {
			case shape&bit == 0:
				h[name] = v
			case shape&(bit<<4) == 0:
				h[name] = int32(v)
			default:
				h[name] = extra
			}
		}
		put(1, HeaderAttempt, attempt)
		put(2, HeaderMaxAttempts, maxAttempts)
		put(4, HeaderPriority, priority)
		put(8, HeaderEnqueuedAt, enqueued)
		if shape&0x80 == 0 {
			h[HeaderQueue] = queue
		} else {
			h[HeaderQueue] = attempt
		}
		h[UserHeaderPrefix+extra] = extra
		if shape&0x40 != 0 {
			h[HeaderLastError] = body
		}
		d := &amqp.Delivery{Headers: h, ContentType: contentType, MessageId: id, Body: body}
		env, err := Decode(d)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		p, err := Encode(env, Options{})
		if err != nil {
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
		{"header name", func(e *runtime.Envelope) { e.Headers = map[string]string{strings.Repeat("k", 250): "v"} }, 250 + len(UserHeaderPrefix)},
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
	env.Headers = map[string]string{strings.Repeat("h", 255-len(UserHeaderPrefix)): "v"}
	if _, err := Encode(env, Options{}); err != nil {
		t.Errorf("Encode of 255-byte fields: %v", err)
	}
}

func TestCheckPublishing(t *testing.T) {
	long := strings.Repeat("x", 256)
	ok := amqp.Publishing{MessageId: "id", Headers: amqp.Table{"a": amqp.Table{"b": "c"}}}
	if err := CheckPublishing("", "q", &ok); err != nil {
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
		err := CheckPublishing(tc.exchange, tc.key, &tc.msg)
		if !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "256 bytes") {
			t.Errorf("%s: CheckPublishing = %v, want ErrTooLong naming it and 256 bytes", name, err)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
