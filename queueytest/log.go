package queueytest

import (
	"io"
	"log/slog"
	"sync"
	"testing"
)

// testLogger returns a logger that writes to t's output, as t.Log does:
// shown when the test fails, or with go test -v. Records logged once t
// has finished (by a worker the test left running) are dropped, since t
// takes no more output then.
func testLogger(t testing.TB) *slog.Logger {
	w := &testWriter{out: t.Output()}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, nil))
}

// testWriter writes to a test's output until it is closed.
type testWriter struct {
	mu     sync.Mutex
	out    io.Writer
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	return w.out.Write(p)
}

func (w *testWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
}
