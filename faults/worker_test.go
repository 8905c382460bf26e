package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// workerEnv carries a worker process's config; TestMain runs the worker
// instead of the tests when it is set.
const workerEnv = "QUEUEY_FAULTS_WORKER"

// job is the suite's job. A Crash job makes its handler exit the process.
type job struct {
	N     int
	Crash bool
}

// workerConfig is what a worker process does.
type workerConfig struct {
	URL      string
	Queue    runtime.QueueConfig
	Ledger   string        // file each handled job is appended to
	Work     time.Duration // how long each job takes
	Shutdown time.Duration
}

// workerMain runs a worker until SIGTERM. Each job's handler appends
// "id attempt unixnano" to the ledger in one write, which the kernel keeps
// even when the process is killed the next moment, then works for a while.
func workerMain(raw string) int {
	var cfg workerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "worker config:", err)
		return 2
	}
	ledger, err := os.OpenFile(cfg.Ledger, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := rabbitmq.Dial(ctx, cfg.URL, rabbitmq.Options{Logger: log, ManagementURL: brokertest.ManagementURL()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer b.Close()
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(cfg.Shutdown))
	runtime.Handle(w, cfg.Queue, func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		line := fmt.Sprintf("%s %d %d\n", info.ID, info.Attempt, time.Now().UnixNano())
		if _, err := ledger.WriteString(line); err != nil {
			return err
		}
		if j.Crash {
			os.Exit(3) // a poison pill: the process dies mid-job
		}
		t := time.NewTimer(cfg.Work) // the job's work
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "Run:", err)
		return 1
	}
	return 0
}

// workerProc is a worker process of the test binary.
type workerProc struct {
	name   string
	cmd    *exec.Cmd
	ledger string
	stderr string
	exited chan struct{}
	err    error // after exited
}

// startWorker starts a worker process; it is stopped when t ends.
func startWorker(t *testing.T, name string, cfg workerConfig) *workerProc {
	t.Helper()
	dir := t.TempDir()
	cfg.Ledger = filepath.Join(dir, "ledger")
	raw, _ := json.Marshal(cfg)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{name: name, ledger: cfg.Ledger, stderr: filepath.Join(dir, "stderr"), exited: make(chan struct{})}
	errf, err := os.Create(w.stderr)
	if err != nil {
		t.Fatal(err)
	}
	w.cmd = exec.Command(exe, "-test.run=^$")
	w.cmd.Env = append(os.Environ(), workerEnv+"="+string(raw))
	w.cmd.Stdout, w.cmd.Stderr = io.Discard, errf
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.err = w.cmd.Wait()
		errf.Close()
		close(w.exited)
	}()
	t.Cleanup(func() { w.stop(t) })
	return w
}

// stop ends the worker gracefully, or kills it when it does not end in
// time.
func (w *workerProc) stop(t *testing.T) {
	select {
	case <-w.exited:
		return
	default:
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(wait):
		t.Errorf("worker %s did not stop within %v; killed", w.name, wait)
		_ = w.cmd.Process.Kill()
		<-w.exited
	}
}

// kill kills the worker with SIGKILL and waits for it to be gone.
func (w *workerProc) kill() {
	_ = w.cmd.Process.Kill()
	<-w.exited
}

// logTail is the end of the worker's stderr, for failure messages.
func (w *workerProc) logTail() string {
	b, _ := os.ReadFile(w.stderr)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// entry is one handled job of a ledger.
type entry struct {
	id      string
	attempt int
	at      time.Time
	worker  string
}

// entries reads the worker's ledger. A last line cut short by a kill is
// ignored.
func (w *workerProc) entries() []entry {
	b, err := os.ReadFile(w.ledger)
	if err != nil {
		return nil
	}
	var out []entry
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		var (
			id      string
			attempt int
			ns      int64
		)
		if _, err := fmt.Sscanf(string(b[:i]), "%s %d %d", &id, &attempt, &ns); err == nil {
			out = append(out, entry{id: id, attempt: attempt, at: time.Unix(0, ns), worker: w.name})
		}
		b = b[i+1:]
	}
	return out
}
