package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// holeProxy forwards TCP connections to an upstream address until it is
// told to black-hole them: from then on, what either side sends is read
// and dropped, and the connections stay open, as on a network that lost
// its route. With a latency, every byte reaches the other side that long
// after it was sent, each way, in order: a slow link. It is a few dozen
// lines, so the suite carries it instead of a proxy library and its
// dependencies.
type holeProxy struct {
	l        net.Listener
	upstream string
	latency  time.Duration
	holed    atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

func startProxy(t *testing.T, upstream string) *holeProxy {
	t.Helper()
	return startSlowProxy(t, upstream, 0)
}

// startSlowProxy starts a proxy that delays what it forwards by latency,
// each way.
func startSlowProxy(t *testing.T, upstream string, latency time.Duration) *holeProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &holeProxy{l: l, upstream: upstream, latency: latency}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *holeProxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(u, c) })
		p.wg.Go(func() { p.pipe(c, u) })
	}
}

// chunk is bytes read from one side, due on the other at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst until either closes, dropping everything once the
// proxy is black-holed, and delaying it by the proxy's latency.
func (p *holeProxy) pipe(dst io.Writer, src io.Reader) {
	if p.latency > 0 {
		p.slowPipe(dst, src)
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.holed.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// slowPipe is pipe with the proxy's latency: a reader queues what it reads
// with the time it is due, and the writer writes each chunk then, in order.
func (p *holeProxy) slowPipe(dst io.Writer, src io.Reader) {
	chunks := make(chan chunk, 1<<14)
	var wg sync.WaitGroup
	wg.Go(func() {
		for c := range chunks {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d) // the link's latency
			}
			if _, err := dst.Write(c.b); err != nil {
				for range chunks {
				}
				return
			}
		}
	})
	defer wg.Wait()
	defer close(chunks)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.holed.Load() {
			chunks <- chunk{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.latency)}
		}
		if err != nil {
			return
		}
	}
}

func (p *holeProxy) close() {
	p.l.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestBlackHole: when the broker stops answering without closing anything
// (a black-holed TCP connection), an enqueue fails when its context ends,
// and Worker.Run returns within its shutdown timeout plus a second.
func TestBlackHole(t *testing.T) {
	brokerURL := gate(t)
	u, err := url.Parse(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, u.Host)
	viaProxy := *u
	viaProxy.Host = proxy.l.Addr().String()
	q := testQueue(t, brokerURL)
	b, p := producer(t, viaProxy.String(), q)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	const shutdown = time.Second
	started := make(chan struct{}, 100)
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(shutdown))
	runtime.Handle(w, q, func(ctx context.Context, j job) error {
		started <- struct{}{}
		work := time.NewTimer(200 * time.Millisecond) // the job's work
		defer work.Stop()
		select {
		case <-work.C:
			return errors.New("fails, so that its settle publishes a retry")
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	wctx, stop := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(wctx) }()
	jobs := make([]job, 20)
	if _, err := runtime.EnqueueMany(ctx, p, q, jobs); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(wait):
		t.Fatal("no job started")
	}

	proxy.holed.Store(true)

	const deadline = time.Second
	ectx, ecancel := context.WithTimeout(context.Background(), deadline)
	begin := time.Now()
	_, err = runtime.Enqueue(ectx, p, q, job{})
	took := time.Since(begin)
	ecancel()
	fmt.Printf("black hole: enqueue failed after %v with a %v deadline: %v\n", took.Round(time.Millisecond), deadline, err)
	if err == nil {
		t.Fatal("enqueue through a black hole succeeded")
	}
	if took > deadline+500*time.Millisecond {
		t.Errorf("enqueue through a black hole took %v, want it to end with its context (%v)", took, deadline)
	}

	stop()
	begin = time.Now()
	select {
	case err = <-runErr:
	case <-time.After(wait):
		t.Fatalf("Run did not return within %v of its context ending, through a black hole", wait)
	}
	took = time.Since(begin)
	fmt.Printf("black hole: Run returned %v after its context ended (shutdown timeout %v): %v\n", took.Round(time.Millisecond), shutdown, err)
	if took > shutdown+time.Second {
		t.Errorf("Run took %v to return, want at most the shutdown timeout plus a second (%v)", took, shutdown+time.Second)
	}
}
