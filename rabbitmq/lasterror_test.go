package rabbitmq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestLongForeignErrorRetries: a handler's error longer than a job
// carries, in text of many-byte characters (an HTTP body, say), is cut
// on a character's boundary, so the retried job is a valid envelope and
// runs again, instead of coming back as poison with attempts left.
func TestLongForeignErrorRetries(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, p := jobQueue(t, b, ".retry.1000")
	runs := make(chan runtime.Info, 2)
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second))
	runtime.Handle(w, q, func(ctx context.Context, _ job) error {
		info, _ := runtime.InfoFromContext(ctx)
		runs <- info
		if info.Attempt == 1 {
			// A stray byte, then 3-byte characters, placed so that a
			// cut at 4,093 bytes falls inside one.
			return errors.New("x\xff" + strings.Repeat("日本語", 2000))
		}
		return nil
	})
	if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	stop := brokertest.Run(t, w)
	defer stop()
	within(t, runs, "the first run")
	second := within(t, runs, "the retry's run")
	if second.Attempt != 2 {
		t.Errorf("second run at attempt %d, want 2", second.Attempt)
	}
}
