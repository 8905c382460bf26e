package rabbitmq_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestOverlongIDIsRefusedAlone: a job ID longer than an AMQP short string
// is refused with an error naming the field and its length, before it
// reaches the wire, while many good publishes on the same connection all
// succeed: sent, it would make the broker close the publishing connection.
func TestOverlongIDIsRefusedAlone(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b)
	const good = 400
	errs := make(chan error, good)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range good {
		wg.Go(func() {
			<-start
			_, err := runtime.Enqueue(ctxT(t), p, q, job{N: i})
			errs <- err
		})
	}
	var bad error
	wg.Go(func() {
		<-start
		_, bad = runtime.Enqueue(ctxT(t), p, q, job{N: -1}, runtime.WithID(strings.Repeat("x", 300)))
	})
	close(start)
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			if failed <= 3 {
				t.Errorf("good publish: %v", err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d good publishes failed", failed, good)
	}
	if !errors.Is(bad, rabbitmq.ErrFieldTooLong) {
		t.Fatalf("publish with a 300-byte ID = %v, want ErrFieldTooLong", bad)
	}
	for _, want := range []string{"ID", "300 bytes"} {
		if !strings.Contains(bad.Error(), want) {
			t.Errorf("error %q does not say %q", bad, want)
		}
	}
	if n := queueLen(t, rawChannel(t), q.Name); n != good {
		t.Errorf("queue holds %d jobs, want %d", n, good)
	}

	// Every path checks: a raw publish with a too-long routing key, too.
	err := b.PublishRaw(ctxT(t), strings.Repeat("q", 256), []byte("x"))
	if !errors.Is(err, rabbitmq.ErrFieldTooLong) || !strings.Contains(err.Error(), fmt.Sprint(256)) {
		t.Errorf("raw publish to a 256-byte queue name = %v, want ErrFieldTooLong naming its length", err)
	}
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: good}); err != nil {
		t.Errorf("publish after the refused ones: %v", err)
	}
}
