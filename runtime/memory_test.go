package runtime_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/queuey/queuey/runtime"
	"github.com/queuey/queuey/runtime/backendtest"
)

func TestMemoryBackendConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Features{}, func(t *testing.T) runtime.Backend {
		b := runtime.NewMemoryBackend()
		b.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}
