package runtime_test

import (
	"context"
	"testing"

	"github.com/queuey/queuey/internal/rawpublish"
	"github.com/queuey/queuey/runtime"
	"github.com/queuey/queuey/runtime/backendtest"
)

func TestMemoryBackendConformance(t *testing.T) {
	f := backendtest.Features{
		PublishRaw: func(ctx context.Context, b runtime.Backend, queue string, body []byte) error {
			return rawpublish.ToMemory(ctx, b, queue, body)
		},
	}
	backendtest.Run(t, f, func(t *testing.T) runtime.Backend {
		b := quietMemory()
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}
