package dashboard

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/hooks"
	"github.com/queuey/queuey/runtime"
)

// job is the payload of the test queue's jobs.
type job struct {
	To   string
	Note string
}

const testQueue = "dash.send"

var testConfig = runtime.QueueConfig{Name: testQueue, Kind: runtime.KindOf[job](), MaxAttempts: 3, RetryBase: time.Second}

// memFixture is a memory backend with testQueue declared and a dashboard
// over it, served by httptest.
type memFixture struct {
	b   *runtime.MemoryBackend
	srv *Server
	ts  *httptest.Server
}

func newMemFixture(t *testing.T, opts Options) *memFixture {
	t.Helper()
	b := runtime.NewMemoryBackend(runtime.MemoryLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { b.Close() })
	if err := b.Declare(context.Background(), testConfig); err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := New(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &memFixture{b: b, srv: srv, ts: ts}
}

// kill enqueues one job per payload and dead-letters each with reason,
// returning their IDs in order.
func (f *memFixture) kill(t *testing.T, reason string, jobs ...job) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := runtime.NewProducerUndeclared(f.b)
	var ids []string
	for _, j := range jobs {
		payload, err := msgpack.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		id, err := runtime.Hooks(hooks.K).EnqueuePayload(ctx, p, testConfig, payload)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	cfg := testConfig
	cfg.Prefetch = len(jobs)
	sub, err := f.b.Consume(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for range jobs {
		select {
		case d := <-sub.Deliveries():
			env := d.Envelope()
			env.LastError = reason
			if err := d.DeadLetter(ctx, env, reason); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("jobs not delivered: %v", ctx.Err())
		}
	}
	return ids
}

// dead returns how many dead letters testQueue holds.
func (f *memFixture) dead(t *testing.T) int {
	t.Helper()
	st, err := f.b.QueueStats(context.Background(), admin.Queue{Name: testConfig.Name})
	if err != nil {
		t.Fatal(err)
	}
	return st[0].Dead
}

// get fetches path and returns status and body.
func (f *memFixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := f.ts.Client().Get(f.ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return readBody(t, resp)
}

// post submits form to path as a same-origin browser would, with headers
// set on top.
func (f *memFixture) post(t *testing.T, path string, form url.Values, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.ts.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return readBody(t, resp)
}

func readBody(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
