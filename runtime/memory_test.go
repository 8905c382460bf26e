package runtime_test

import (
	"testing"

	"github.com/queuey/queuey/runtime"
	"github.com/queuey/queuey/runtime/backendtest"
)

func TestMemoryBackendConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Features{}, func(t *testing.T) runtime.Backend {
		b := quietMemory()
		t.Cleanup(func() { _ = b.Close() })
		return b
	})
}
