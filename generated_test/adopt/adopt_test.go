package adopt_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queuey/queuey/generated_test/adopt/jobs"
	"github.com/queuey/queuey/generated_test/adopt/testdata/other"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/vmihailenco/msgpack/v5.cachedValue.func1"))
}

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// readyCounter is the queue-depth capability both backends have.
type readyCounter interface {
	Ready(ctx context.Context, queue string) (int, error)
}

// TestOneKindPerQueue: two packages claim one queue name. A producer made
// with jobs.Queues() refuses other.EnqueueInvoice with ErrKindConflict
// naming both kinds, before anything is published, and the queue's own
// Mail jobs are handled as before. On both backends.
func TestOneKindPerQueue(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		oneKindPerQueue(t, runtime.NewMemoryBackend())
	})
	t.Run("rabbitmq", func(t *testing.T) {
		url := brokertest.Require(t)
		names := []string{jobs.MailQueue.Name, jobs.MailQueue.Name + ".dead"}
		brokertest.DeleteQueues(url, names...)
		t.Cleanup(func() { brokertest.DeleteQueues(url, names...) })
		b, err := rabbitmq.Dial(context.Background(), url, rabbitmq.Options{ManagementURL: brokertest.ManagementURL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		oneKindPerQueue(t, b)
	})
}

func oneKindPerQueue(t *testing.T, b runtime.Backend) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := runtime.NewProducer(ctx, b, jobs.Queues()...)
	if err != nil {
		t.Fatal(err)
	}

	_, err = other.EnqueueInvoice(ctx, p, other.Invoice{Cents: 100})
	if !errors.Is(err, runtime.ErrKindConflict) {
		t.Fatalf("EnqueueInvoice onto the queue declared for jobs.Mail = %v, want ErrKindConflict", err)
	}
	for _, kind := range []string{"jobs.Mail", "other.Invoice"} {
		if !strings.Contains(err.Error(), kind) {
			t.Errorf("error %q does not name %s", err, kind)
		}
	}
	if _, err := other.EnqueueManyInvoice(ctx, p, []other.Invoice{{Cents: 1}}); !errors.Is(err, runtime.ErrKindConflict) {
		t.Errorf("EnqueueManyInvoice = %v, want ErrKindConflict", err)
	}
	n, err := b.(readyCounter).Ready(ctx, jobs.MailQueue.Name)
	if err != nil || n != 0 {
		t.Fatalf("ready on %s after the refused enqueues = %d, %v; want 0", jobs.MailQueue.Name, n, err)
	}

	if _, err := jobs.EnqueueMail(ctx, p, jobs.Mail{To: "a@b.c"}); err != nil {
		t.Fatal(err)
	}
	got := make(chan jobs.Mail, 4)
	w := runtime.NewWorker(b)
	jobs.HandleMail(w, func(_ context.Context, m jobs.Mail) error {
		got <- m
		return nil
	})
	stop := brokertest.Run(t, w)
	defer stop()
	select {
	case m := <-got:
		if m.To != "a@b.c" {
			t.Fatalf("HandleMail ran with %+v, want To a@b.c", m)
		}
	case <-ctx.Done():
		t.Fatal("the Mail job was not handled")
	}
	stop()
	if len(got) != 0 {
		t.Errorf("HandleMail ran %d more times: a refused job reached it", len(got))
	}
}
