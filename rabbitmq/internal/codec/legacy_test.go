package codec

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

// legacy is env as earlier versions published it.
func legacy(env *runtime.Envelope) *amqp.Delivery {
	p, err := Encode(env, Options{HeaderFormat: true})
	if err != nil {
		panic(err)
	}
	return deliver(p)
}

// TestHeaderFormatAsEarlierVersions: HeaderFormat writes what earlier
// versions wrote and read, field for field.
func TestHeaderFormatAsEarlierVersions(t *testing.T) {
	env := sample()
	p, err := Encode(env, Options{HeaderFormat: true, Priority: 9, DeadReason: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	want := amqp.Table{
		"x-queuey-attempt": int64(3), "x-queuey-max-attempts": int64(5), "x-queuey-priority": int64(2),
		"x-queuey-enqueued-at": env.EnqueuedAt.UnixNano(), "x-queuey-queue": "emails.send_email",
		"x-queuey-last-error": "boom", "x-queuey-dead-reason": "gone",
		"x-queuey-h-traceparent": "00-abc-def-01", "x-queuey-h-tenant": "t1",
	}
	if diff := cmp.Diff(want, p.Headers); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if p.ContentType != "application/msgpack" || string(p.Body) != string(env.Payload) || p.Priority != 9 {
		t.Errorf("content type %q, body % x, priority %d; want application/msgpack, the payload, 9", p.ContentType, p.Body, p.Priority)
	}
	long := sample()
	long.Headers = map[string]string{strings.Repeat("k", 250): "v"}
	if _, err := Encode(long, Options{HeaderFormat: true}); !errors.Is(err, ErrTooLong) {
		t.Errorf("a 250-byte header name with its prefix: %v, want ErrTooLong", err)
	}
}

// TestLegacyDecodes: messages published in the header format, still
// waiting in queues after an upgrade, are read as before.
func TestLegacyDecodes(t *testing.T) {
	env := sample()
	got, err := Decode(legacy(env))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(env, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLegacyDecodeErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(*amqp.Delivery)
		want string
	}{
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
			d := legacy(sample())
			tc.mut(d)
			env, err := Decode(d)
			if err == nil {
				t.Fatalf("Decode succeeded with %+v, want an error", env)
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

func TestLegacyDecodeAcceptsNarrowIntegers(t *testing.T) {
	d := legacy(sample())
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
