package queueytest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queuey/queuey/queueytest"
	qruntime "github.com/queuey/queuey/runtime"
)

// TestKitRefusesLongIDs: the kit refuses a job ID RabbitMQ cannot carry,
// as every backend does, naming the limit, and stores nothing.
func TestKitRefusesLongIDs(t *testing.T) {
	t.Parallel()
	b := queueytest.New(t, hourly)
	_, err := qruntime.Enqueue(context.Background(), qruntime.NewProducerUndeclared(b), hourly, ping{}, qruntime.WithID(strings.Repeat("i", 300)))
	if !errors.Is(err, qruntime.ErrInvalidOption) || !strings.Contains(err.Error(), "over 255") {
		t.Fatalf("Enqueue with a 300-byte ID = %v, want ErrInvalidOption naming the 255-byte limit", err)
	}
	queueytest.RequireNotEnqueued(t, b, hourlyJob)
}
