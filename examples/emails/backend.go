package main

import (
	"context"

	"github.com/queuey/queuey/runtime"
)

// openBackend returns the backend to run on, a name to print for it and a
// function that closes it.
func openBackend(ctx context.Context) (runtime.Backend, string, func() error, error) {
	b := runtime.NewMemoryBackend()
	return b, "in memory", b.Close, nil
}
