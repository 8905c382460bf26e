package dashboard

import (
	"context"
	"net/http"
	"testing"
	"time"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "LOCALHOST": true, "[::1]:8080": true, "127.1.2.3": true,
		"example.com:8080": false, "10.0.0.1:8080": false, "localhost.example.com": false, "": false,
	} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestListenSaysWhetherLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:0": true, ":0": false} {
		ln, loopback, err := Listen(addr)
		if err != nil {
			t.Fatalf("Listen(%q): %v", addr, err)
		}
		ln.Close()
		if loopback != want {
			t.Errorf("Listen(%q) loopback = %v, want %v", addr, loopback, want)
		}
	}
	if _, _, err := Listen("8080"); err == nil {
		t.Error(`Listen("8080") succeeded; want an error asking for host:port`)
	}
}

// TestServeStopsWithContext serves until the context ends, then returns
// nil.
func TestServeStopsWithContext(t *testing.T) {
	ln, _, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	}()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status %d, want 418 from the handler", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after its context ended: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of its context ending")
	}
}
