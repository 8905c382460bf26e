package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// DefaultAddr is where the dashboard listens unless told otherwise: loopback
// only.
const DefaultAddr = "127.0.0.1:8080"

// Listen opens addr for the dashboard and reports whether it is a loopback
// address. An empty host (":8080") means every interface and is not
// loopback.
func Listen(addr string) (net.Listener, bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false, fmt.Errorf("dashboard address %q: %w (want host:port, such as %s)", addr, err, DefaultAddr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, false, fmt.Errorf("dashboard: listen on %s: %w", addr, err)
	}
	return ln, host != "" && loopbackHost(host), nil
}

// Serve serves h on ln until ctx ends, then shuts down, giving requests in
// progress up to five seconds.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
