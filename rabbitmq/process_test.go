package rabbitmq_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// childEnv carries a worker process's config; TestMain runs the worker
// instead of the tests when it is set.
const childEnv = "QUEUEY_RMQ_CHILD"

// childConfig is what a worker process started by a test does.
type childConfig struct {
	URL string
	// Queue gets Schedule's ticks, when Schedule is set.
	Queue    runtime.QueueConfig
	Schedule *runtime.Schedule
	// Handle are queues the worker handles: each job's handler prints
	// "start <queue> <job id> <unix ns>" on stdout, then works for Work
	// (or, with Block, until its context ends), then prints "end <queue>
	// <job id> <unix ns>". The times are the wall clock's, which every
	// process on the machine shares, so a test can merge the lines of
	// several processes into one ledger.
	Handle []runtime.QueueConfig
	Work   time.Duration
	Block  bool
}

// tick is the job a schedule of a worker process enqueues: it names the
// process that fired it. Key is the field a queue's LimitKey names.
type tick struct {
	PID int
	Key string
}

// childMain runs a worker until SIGTERM, then exits 0.
func childMain(raw string) int {
	var cfg childConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := rabbitmq.Dial(ctx, cfg.URL, rabbitmq.Options{ManagementURL: brokertest.ManagementURL(), Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer b.Close()
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(5*time.Second))
	if cfg.Schedule != nil {
		runtime.Periodic(w, cfg.Queue, *cfg.Schedule, func() tick { return tick{PID: os.Getpid()} })
	}
	out := make(chan string, 1024)
	for _, q := range cfg.Handle {
		runtime.Handle(w, q, func(ctx context.Context, j tick) error {
			info, _ := runtime.InfoFromContext(ctx)
			out <- fmt.Sprintf("start %s %s %d", q.Name, info.ID, time.Now().UnixNano())
			var work <-chan time.Time
			if !cfg.Block {
				t := time.NewTimer(cfg.Work)
				defer t.Stop()
				work = t.C
			}
			select {
			case <-work:
			case <-ctx.Done():
			}
			out <- fmt.Sprintf("end %s %s %d", q.Name, info.ID, time.Now().UnixNano())
			return nil
		})
	}
	go func() {
		for line := range out {
			fmt.Println(line)
		}
	}()
	fmt.Println("ready")
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		return 1
	}
	return 0
}

// child is a worker process started by a test.
type child struct {
	cmd   *exec.Cmd
	lines chan string // its stdout, line by line, closed at its end
	done  chan struct{}
}

// startChild starts a worker process with cfg and waits until it runs.
// It is killed when t ends, if still running.
func startChild(t *testing.T, cfg childConfig) *child {
	t.Helper()
	cfg.URL = amqpURL()
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker process: %v", err)
	}
	c := &child{cmd: cmd, lines: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		_ = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() { c.kill(t) })
	if l := within(t, c.lines, "the worker process to start"); l != "ready" {
		t.Fatalf("worker process said %q first, want ready", l)
	}
	return c
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// kill ends the process with SIGKILL, as a crash would, and waits for it.
func (c *child) kill(t *testing.T) {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	within(t, c.done, "the killed worker process to end")
}

// stop ends the process with SIGTERM, a graceful shutdown, and waits for it.
func (c *child) stop(t *testing.T) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	within(t, c.done, "the worker process to stop")
	if code := c.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("worker process %d exited %d after SIGTERM, want 0", c.pid(), code)
	}
}
