package rabbitmq_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// alongside is a crowd of goroutines enqueueing small jobs while a test
// does something to the same backend.
type alongside struct {
	stopc chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
	mu    sync.Mutex
	ok    int
	errs  []error
}

// enqueueAlongside starts n goroutines that each enqueue small jobs onto q
// through p, one after another, until the returned stop is called, and
// returns once each has enqueued one. stop returns how many jobs were
// enqueued and the errors of those that were not.
func enqueueAlongside(t *testing.T, p *runtime.Producer, q runtime.QueueConfig, n int) (stop func() (int, []error)) {
	t.Helper()
	a := &alongside{stopc: make(chan struct{})}
	ctx := ctxT(t)
	first := make(chan struct{}, n)
	for g := range n {
		a.wg.Go(func() {
			for i := 0; ; i++ {
				_, err := runtime.Enqueue(ctx, p, q, job{N: g*1_000_000 + i})
				a.mu.Lock()
				if err != nil {
					a.errs = append(a.errs, err)
				} else {
					a.ok++
				}
				a.mu.Unlock()
				if i == 0 {
					first <- struct{}{}
				}
				select {
				case <-a.stopc:
					return
				default:
				}
			}
		})
	}
	stop = func() (int, []error) {
		a.once.Do(func() { close(a.stopc) })
		a.wg.Wait()
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.ok, a.errs
	}
	t.Cleanup(func() { stop() })
	for range n {
		within(t, first, "the first enqueue of each goroutine")
	}
	return stop
}

// noneFailed fails t for the errors of the enqueues alongside.
func noneFailed(t *testing.T, ok int, errs []error) {
	t.Helper()
	for i, err := range errs {
		if i < 3 {
			t.Errorf("an enqueue alongside failed: %v", err)
		}
	}
	if len(errs) > 0 {
		t.Errorf("%d of %d enqueues alongside failed", len(errs), ok+len(errs))
	}
}

// samePublishConnection fails t when b's publishing connection is not pub,
// or is closed: the broker closed it.
func samePublishConnection(t *testing.T, b *rabbitmq.Backend, pub *amqp.Connection) {
	t.Helper()
	if now, _ := rabbitmq.Connections(b); now != pub || pub.IsClosed() {
		t.Errorf("the publishing connection was closed (closed: %v, replaced: %v)", pub.IsClosed(), now != pub)
	}
}

// TestOverMaxMessageSizeIsRefusedBeforeSending: a job whose body is over
// Options.MaxMessageSize, if only by the envelope's fields, is refused
// before it is sent, with an error naming the job, the size and the limit,
// alone: enqueues alongside, and the rest of a batch, succeed.
func TestOverMaxMessageSizeIsRefusedBeforeSending(t *testing.T) {
	const limit = 1 << 20
	b := dial(t, rabbitmq.Options{MaxMessageSize: limit})
	q, p := jobQueue(t, b)
	large := make([]byte, 2<<20)

	stop := enqueueAlongside(t, p, q, 20)
	_, bad := runtime.Hooks(hooks.K).EnqueuePayload(ctxT(t), p, q, make([]byte, limit-8), runtime.WithID("too-big"))
	enqueued, errs := stop()
	noneFailed(t, enqueued, errs)
	if !errors.Is(bad, runtime.ErrTooLarge) {
		t.Fatalf("enqueue of a job 8 bytes short of the limit = %v, want ErrTooLarge", bad)
	}
	for _, want := range []string{`"too-big"`, q.Name, "its body is", fmt.Sprintf("max message size of %d", limit), "MaxMessageSize"} {
		if !strings.Contains(bad.Error(), want) {
			t.Errorf("error %q does not say %q", bad, want)
		}
	}

	payloads := make([][]byte, 21)
	for i := range payloads {
		payloads[i] = []byte{0x80}
	}
	payloads[10] = large
	_, err := runtime.Hooks(hooks.K).EnqueuePayloads(ctxT(t), p, q, payloads)
	var be *runtime.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("batch with one 2 MiB job = %v, want a BatchError", err)
	}
	for i, err := range be.Errs {
		if i == 10 && !errors.Is(err, runtime.ErrTooLarge) {
			t.Errorf("batch: the 2 MiB job = %v, want ErrTooLarge", err)
		} else if i != 10 && err != nil {
			t.Errorf("batch: job %d: %v", i, err)
		}
	}
	if n := queueLen(t, rawChannel(t), q.Name); n != enqueued+20 {
		t.Errorf("queue holds %d jobs, want %d", n, enqueued+20)
	}
}

// TestBrokerMaxMessageSizeIsTheDefault: the broker refuses a body one byte
// over the default max message size of its version, closing the channel;
// the backend, left at its default, refuses such a job before sending it,
// and enqueues alongside, some of them on the channel it would have closed,
// all succeed.
func TestBrokerMaxMessageSizeIsTheDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("sends a message of the broker's max message size")
	}
	b := dial(t, rabbitmq.Options{})
	limit := rabbitmq.DefaultMaxMessageSize
	if strings.HasPrefix(b.ServerVersion(), "4.") {
		limit = rabbitmq.DefaultMaxMessageSize4
	}
	q, p := jobQueue(t, b)

	raw := rawChannel(t)
	closes := raw.NotifyClose(make(chan *amqp.Error, 1))
	if err := raw.Confirm(false); err != nil {
		t.Fatal(err)
	}
	dc, err := raw.PublishWithDeferredConfirmWithContext(ctxT(t), "", q.Name, false, false, amqp.Publishing{Body: make([]byte, limit+1)})
	if err != nil {
		t.Fatal(err)
	}
	if acked, _ := dc.WaitContext(ctxT(t)); acked {
		t.Skipf("the broker took a body of %d bytes: its max_message_size is not its version's default", limit+1)
	}
	if cerr := within(t, closes, "the broker closing the channel"); cerr == nil || cerr.Code != amqp.PreconditionFailed || !strings.Contains(cerr.Reason, fmt.Sprint(limit)) {
		t.Fatalf("channel closed with %v, want 406 naming %d", cerr, limit)
	}

	stop := enqueueAlongside(t, p, q, 20)
	_, bad := runtime.Hooks(hooks.K).EnqueuePayload(ctxT(t), p, q, make([]byte, limit+1), runtime.WithID("too-big"))
	enqueued, errs := stop()
	noneFailed(t, enqueued, errs)
	if !errors.Is(bad, runtime.ErrTooLarge) || !strings.Contains(bad.Error(), fmt.Sprintf("max message size of %d", limit)) {
		t.Fatalf("enqueue of a job of %d bytes = %v, want ErrTooLarge naming %d", limit+1, bad, limit)
	}
}

// recorder keeps every byte written to a connection.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.buf.Write(p)
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// TestHeaderSizeIsWhatTheClientWrites: codec.HeaderSize is the payload size
// of the content header frame amqp091-go writes, for every property and
// every field type the broker takes.
func TestHeaderSizeIsWhatTheClientWrites(t *testing.T) {
	requireBroker(t)
	rec := &recorder{}
	conn, err := amqp.DialConfig(amqpURL(), amqp.Config{Dial: func(network, addr string) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, wait)
		rec.Conn = c
		return rec, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	q := queueName(t)
	if _, err := ch.QueueDeclare(q, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	every := amqp.Table{
		"bool": true, "byte": byte(1), "int8": int8(-1), "int16": int16(-2), "int": 3, "int32": int32(4),
		"int64": int64(5), "uint16": uint16(6), "uint32": uint32(7), "float32": float32(1.5), "float64": 2.5,
		"decimal": amqp.Decimal{Scale: 2, Value: 314}, "string": "s", "bytes": []byte("xyz"),
		"time": time.Unix(1700000000, 0), "nil": nil,
		"array":  []any{"a", int32(1), amqp.Table{"in": []any{true}}},
		"nested": amqp.Table{"deeper": amqp.Table{"k": "v"}},
	}
	msgs := []amqp.Publishing{
		{},
		{Headers: amqp.Table{}},
		{Headers: every},
		{
			Headers: amqp.Table{"k": "v"}, ContentType: "text/plain", ContentEncoding: "gzip", DeliveryMode: amqp.Persistent,
			Priority: 5, CorrelationId: "corr", ReplyTo: "reply", Expiration: "60000", MessageId: "id-1",
			Timestamp: time.Unix(1700000000, 0), Type: "kind", UserId: "guest", AppId: "app",
		},
		{MessageId: "big", Headers: amqp.Table{"big": strings.Repeat("b", 100_000)}},
	}
	for i, m := range msgs {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctxT(t), "", q, false, false, m)
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		if acked, err := dc.WaitContext(ctxT(t)); !acked {
			t.Fatalf("publish %d not confirmed: %v", i, err)
		}
	}

	rec.mu.Lock()
	wire := bytes.Clone(rec.buf.Bytes())
	rec.mu.Unlock()
	var sizes []int
	for rest := wire[8:]; len(rest) >= 7; { // after the protocol header
		typ, size := rest[0], int(binary.BigEndian.Uint32(rest[3:7]))
		if typ == 2 { // a content header
			sizes = append(sizes, size)
		}
		rest = rest[min(len(rest), 7+size+1):]
	}
	if len(sizes) != len(msgs) {
		t.Fatalf("%d content headers on the wire, want %d", len(sizes), len(msgs))
	}
	for i, m := range msgs {
		if got := codec.HeaderSize(&m); got != sizes[i] {
			t.Errorf("message %d: HeaderSize = %d, amqp091-go wrote %d", i, got, sizes[i])
		}
	}
}
