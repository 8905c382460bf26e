package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/queuey/queuey/runtime"
)

// TestJobOverMaxJobSizeIsRefused: a job larger than any RabbitMQ broker
// takes is refused by the producer, whatever the backend (here the memory
// one), with ErrTooLarge naming the job, the size and the limit; headers
// count; in a batch only that job fails. The payloads are never touched, so
// they cost address space, not memory.
func TestJobOverMaxJobSizeIsRefused(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "sizes", Kind: "job"}
	ctx := context.Background()
	p := producerOf(t, b, q)
	huge := make([]byte, runtime.MaxJobSize+1)

	_, err := p.EnqueuePayload(ctx, q, huge, runtime.WithID("huge"))
	if !errors.Is(err, runtime.ErrTooLarge) {
		t.Fatalf("enqueue of MaxJobSize+1 bytes = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{`"huge"`, `"sizes"`, fmt.Sprint(runtime.MaxJobSize + 1), fmt.Sprint(runtime.MaxJobSize), "MaxJobSize"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	_, err = p.EnqueuePayload(ctx, q, huge[:runtime.MaxJobSize-2], runtime.WithHeaders(map[string]string{"ab": "c"}))
	if !errors.Is(err, runtime.ErrTooLarge) {
		t.Errorf("enqueue of MaxJobSize-2 bytes with 3 bytes of headers = %v, want ErrTooLarge", err)
	}

	_, err = p.EnqueuePayloads(ctx, q, [][]byte{{0x80}, huge, {0x80}})
	var be *runtime.BatchError
	if !errors.As(err, &be) || len(be.Errs) != 3 || be.Errs[0] != nil || !errors.Is(be.Errs[1], runtime.ErrTooLarge) || be.Errs[2] != nil {
		t.Fatalf("batch with one job over MaxJobSize = %v, want only that one refused with ErrTooLarge", err)
	}
	if n, err := b.Ready(ctx, q.Name); err != nil || n != 2 {
		t.Errorf("queue holds %d jobs (%v), want the 2 small ones", n, err)
	}
}

// TestHeadersMustBeUTF8: a header name or value that is not valid UTF-8
// is refused at enqueue, where the caller can act, since every worker
// would refuse the job as poison.
func TestHeadersMustBeUTF8(t *testing.T) {
	t.Parallel()
	b := quietMemory()
	defer b.Close()
	q := runtime.QueueConfig{Name: "utf8.headers", Kind: "job"}
	p := producerOf(t, b, q)
	for _, h := range []map[string]string{{"a\xff": "v"}, {"k": "v\xfe"}} {
		_, err := p.EnqueuePayload(context.Background(), q, []byte{0x80}, runtime.WithHeaders(h))
		if !errors.Is(err, runtime.ErrInvalidOption) || !strings.Contains(err.Error(), "UTF-8") {
			t.Errorf("enqueue with headers %q = %v, want ErrInvalidOption saying UTF-8", h, err)
		}
	}
}
