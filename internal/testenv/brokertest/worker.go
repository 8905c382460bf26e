package brokertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// stopTimeout bounds a worker's shutdown in tests.
const stopTimeout = 30 * time.Second

// RunWorker runs a worker of b with h on q, logging to b's logger, until
// tb ends or stop is called; stop returns once Run has, failing tb when Run
// failed or did not return within 30 seconds.
func RunWorker[T any](tb testing.TB, b runtime.Backend, q runtime.QueueConfig, h func(ctx context.Context, job T) error) (stop func()) {
	tb.Helper()
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second))
	runtime.Handle(w, q, h)
	return Run(tb, w)
}

// Runner is what runs until its context ends: a runtime.Worker, an
// outbox.Relay.
type Runner interface {
	Run(ctx context.Context) error
}

// Run runs r until tb ends or stop is called; stop returns once Run has,
// failing tb when Run failed or did not return within 30 seconds.
func Run(tb testing.TB, r Runner) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-errc:
				if err != nil {
					tb.Errorf("%T Run: %v", r, err)
				}
			case <-time.After(stopTimeout):
				tb.Errorf("%T Run did not return %v after its context ended", r, stopTimeout)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}
