package queueytest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/queuey/queuey/queueytest"
	qruntime "github.com/queuey/queuey/runtime"
)

type attachment struct{ Data []byte }

// TestRefusesOversizedJobs: the test kit refuses a job larger than a
// broker with its default settings takes, as the RabbitMQ backend does,
// and records nothing for it.
func TestRefusesOversizedJobs(t *testing.T) {
	t.Parallel()
	q := qruntime.QueueConfig{Name: "mail.attachments", Kind: qruntime.KindOf[attachment]()}
	b := queueytest.New(t, q)
	p, err := qruntime.NewProducer(context.Background(), b, q)
	if err != nil {
		t.Fatal(err)
	}
	job := attachment{Data: make([]byte, qruntime.DefaultMemoryMaxMessageSize+1)}
	if _, err := qruntime.Enqueue(context.Background(), p, q, job); !errors.Is(err, qruntime.ErrTooLarge) {
		t.Fatalf("enqueue of a %d-byte job: %v, want ErrTooLarge", len(job.Data), err)
	}
	queueytest.RequireNotEnqueued(t, b, qruntime.Job[attachment]{Queue: q})
}
