// Package clients_test runs the producers in other languages end to end:
// a Python or Node program enqueues jobs through its client, on the wire
// format of docs/wire-format.md, and a Go worker handles them.
//
// A language whose client cannot run here (no pika and msgpack for
// /usr/bin/python3, no clients/node/node_modules: `make clients` installs
// them) is skipped, unless CI or QUEUEY_REQUIRE_CLIENTS is set: then it
// fails. A broker is needed as for every broker test (QUEUEY_AMQP_URL).
package clients_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/internal/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// pythonPath is the Python the client runs on: Debian's, with
// python3-pika and python3-msgpack.
const pythonPath = "/usr/bin/python3"

// language is a client and how to run its producer program.
type language struct {
	name string
	// ready returns "" when the client can run here, or why not.
	ready func() string
	// command runs testdata's producer of this language.
	command func(ctx context.Context) *exec.Cmd
	// window is how many enqueues the producer keeps in flight.
	window int
	// suite runs the client's own tests.
	suite func(ctx context.Context) *exec.Cmd
}

var languages = []language{
	{
		name: "python",
		ready: func() string {
			if err := exec.Command(pythonPath, "-c", "import pika, msgpack").Run(); err != nil {
				return fmt.Sprintf("%s cannot import pika and msgpack (%v): run `make clients` (apt-get install python3-pika python3-msgpack)", pythonPath, err)
			}
			return ""
		},
		command: func(ctx context.Context) *exec.Cmd {
			return exec.CommandContext(ctx, pythonPath, filepath.Join("testdata", "produce.py"))
		},
		window: 1,
		suite: func(ctx context.Context) *exec.Cmd {
			return exec.CommandContext(ctx, pythonPath, "-m", "unittest", "discover", "-s", "python", "-v")
		},
	},
	{
		name: "node",
		ready: func() string {
			if _, err := exec.LookPath("node"); err != nil {
				return "node is not installed: install Node.js 18 or later, then run `make clients`"
			}
			if _, err := os.Stat(filepath.Join("node", "node_modules", "amqplib")); err != nil {
				return "clients/node/node_modules is missing: run `make clients` (npm ci in clients/node)"
			}
			return ""
		},
		command: func(ctx context.Context) *exec.Cmd {
			return exec.CommandContext(ctx, "node", filepath.Join("testdata", "produce.js"))
		},
		window: 64,
		suite: func(ctx context.Context) *exec.Cmd {
			cmd := exec.CommandContext(ctx, "node", "--test")
			cmd.Dir = "node"
			return cmd
		},
	},
}

// requireClient skips t when lang's client cannot run here, or fails it
// under CI or QUEUEY_REQUIRE_CLIENTS.
func requireClient(t *testing.T, lang language) {
	t.Helper()
	why := lang.ready()
	if why == "" {
		return
	}
	if os.Getenv("CI") != "" || os.Getenv("QUEUEY_REQUIRE_CLIENTS") != "" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// plan is what a producer program reads on stdin.
type plan struct {
	URL           string    `json:"url"`
	Queue         string    `json:"queue"`
	Kind          string    `json:"kind"`
	MaxAttempts   int       `json:"max_attempts"`
	QueueType     string    `json:"queue_type"`
	DelayMode     string    `json:"delay_mode"`
	DelayExchange string    `json:"delay_exchange,omitempty"`
	GranularityMS int64     `json:"granularity_ms"`
	Window        int       `json:"window"`
	Jobs          []planJob `json:"jobs"`
	Invalid       bool      `json:"invalid,omitempty"`
	InvalidKind   string    `json:"invalid_kind,omitempty"`
}

type planJob struct {
	Payload  map[string]any    `json:"payload"`
	Priority int               `json:"priority,omitempty"`
	DelayMS  int64             `json:"delay_ms,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`

	job emails.ChargeCard
}

// jobsOf plans n ChargeCard jobs: a quarter at priority 5 and a quarter
// at 2, a fifth delayed by 1s or 1.7s (2s at the 1s granularity), some with
// headers, UTF-8 and the largest int64.
func jobsOf(n int, delays bool) []planJob {
	jobs := make([]planJob, n)
	for i := range jobs {
		j := &jobs[i]
		j.job = emails.ChargeCard{CustomerID: fmt.Sprintf("c-%04d", i), Cents: int64(i) * 101, Currency: "EUR"}
		switch i % 9 {
		case 4:
			j.job.Currency = "€ürø ✓ 日本"
		case 8:
			j.job.Cents = 1<<63 - 1
		}
		j.Priority = []int{0, 0, 2, 5}[i%4]
		if delays {
			switch i % 10 {
			case 1:
				j.DelayMS = 1000
			case 6:
				j.DelayMS = 1700
			}
		}
		if i%3 == 0 {
			j.Headers = map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tenant": "t" + strconv.Itoa(i)}
		}
		j.Payload = map[string]any{
			"CustomerID": j.job.CustomerID,
			"Cents":      map[string]string{"$int": strconv.FormatInt(j.job.Cents, 10)},
			"Currency":   j.job.Currency,
		}
	}
	return jobs
}

// handled is one job a Go handler ran.
type handled struct {
	job  emails.ChargeCard
	info runtime.Info
	at   time.Time
	seq  int
}

// TestClientSuites runs each client's own tests: its test vectors, and
// its enqueues against the broker.
func TestClientSuites(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang.name, func(t *testing.T) {
			requireClient(t, lang)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := lang.suite(ctx).CombinedOutput()
			if err != nil {
				t.Fatalf("%s tests: %v\n%s", lang.name, err, out)
			}
			if testing.Verbose() {
				t.Logf("%s", out)
			}
		})
	}
}

func TestPolyglotQueue(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang.name, func(t *testing.T) { runPolyglot(t, lang, runtime.DelayQueue, 1000) })
	}
}

func TestPolyglotPlugin(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang.name, func(t *testing.T) { runPolyglot(t, lang, runtime.DelayPlugin, 100) })
	}
}

// runPolyglot has lang's producer enqueue n ChargeCard jobs, then a Go
// worker handle them, and checks every job's fields, that priorities were
// honoured, that no delayed job ran before its delay, and that the invalid
// messages the producer also sent are dead-lettered with their reasons.
func runPolyglot(t *testing.T, lang language, mode runtime.DelayMode, n int) {
	url := brokertest.Require(t)
	requireClient(t, lang)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	q := emails.ChargeCardQueue
	q.Name = fmt.Sprintf("polyglot.%s.%s", lang.name, randomSuffix(t))
	q.Delay = mode
	// One handler at a time, so jobs run in the order the broker
	// delivered them. With two, the operating system can hold one
	// handler's thread off the CPU, job in hand, while the other runs
	// hundreds of jobs: on a loaded machine that reads as an inversion
	// the broker never made.
	q.Concurrency = 1
	t.Cleanup(func() {
		brokertest.DeleteQueues(url, q.Name, q.Name+".dead", q.Name+".deferred.1000", q.Name+".deferred.2000")
		if mode == runtime.DelayPlugin {
			deleteExchange(url, q.Name+".delay")
		}
	})
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{ManagementURL: brokertest.ManagementURL(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Declare(ctx, q); err != nil {
		if errors.Is(err, rabbitmq.ErrPluginMissing) {
			t.Skipf("the delayed-message-exchange plugin is not enabled on the broker, so plugin-mode delays cannot be tested here: %v", err)
		}
		t.Fatal(err)
	}

	jobs := jobsOf(n, true)
	p := plan{
		URL: url, Queue: q.Name, Kind: q.Kind, MaxAttempts: q.MaxAttempts, QueueType: string(q.QueueType),
		DelayMode: string(mode), GranularityMS: 1000, Window: lang.window, Jobs: jobs,
		Invalid: true, InvalidKind: emails.SendEmailQueue.Kind,
	}
	ids, took := produce(ctx, t, lang, p)
	t.Logf("%s enqueued %d jobs in %v (%d in flight at most)", lang.name, n, took.Round(time.Millisecond), lang.window)

	var (
		mu   sync.Mutex
		got  = make(map[string]handled, n)
		seq  int
		done = make(chan struct{})
	)
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second))
	runtime.Handle(w, q, func(ctx context.Context, job emails.ChargeCard) error {
		info, _ := runtime.InfoFromContext(ctx)
		mu.Lock()
		defer mu.Unlock()
		if _, dup := got[info.ID]; !dup {
			got[info.ID] = handled{job: job, info: info, at: time.Now(), seq: seq}
			seq++
			if len(got) == n {
				close(done)
			}
		}
		return nil
	})
	stop := brokertest.Run(t, w)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("handled %d of %d jobs within 30s", len(got), n)
	}
	stop()

	var immediate []handled // jobs enqueued without a delay, in the order they ran
	for i, j := range jobs {
		h, ok := got[ids[i]]
		if !ok {
			t.Errorf("job %d (%s) was not handled", i, ids[i])
			continue
		}
		if h.job != j.job {
			t.Errorf("job %d: handled %+v, want %+v", i, h.job, j.job)
		}
		if h.info.Attempt != 1 || h.info.MaxAttempts != q.MaxAttempts {
			t.Errorf("job %d: attempt %d of %d, want 1 of %d", i, h.info.Attempt, h.info.MaxAttempts, q.MaxAttempts)
		}
		if !maps(h.info.Headers, j.Headers) {
			t.Errorf("job %d: headers %v, want %v", i, h.info.Headers, j.Headers)
		}
		if since := time.Since(h.info.EnqueuedAt); since < 0 || since > time.Minute {
			t.Errorf("job %d: enqueued at %v, %v ago", i, h.info.EnqueuedAt, since)
		}
		if j.DelayMS > 0 {
			if waited := h.at.Sub(h.info.EnqueuedAt); waited < time.Duration(j.DelayMS)*time.Millisecond {
				t.Errorf("job %d, delayed %dms, ran %v after its enqueue", i, j.DelayMS, waited)
			}
		} else {
			immediate = append(immediate, h)
		}
	}
	checkPriorities(t, immediate, jobs, q.Prefetch)
	checkDeadLetters(t, url, q)
}

// checkPriorities checks that the jobs enqueued at once ran by priority:
// every job of a higher priority ran before a job of a lower one, but for
// the deliveries the worker held already (its prefetch) when it took them.
func checkPriorities(t *testing.T, ran []handled, jobs []planJob, prefetch int) {
	t.Helper()
	slices.SortFunc(ran, func(a, b handled) int { return a.seq - b.seq })
	prio := map[string]int{}
	for _, j := range jobs {
		prio[j.job.CustomerID] = j.Priority
	}
	inversions := 0
	for i, h := range ran {
		for _, later := range ran[min(i+prefetch+1, len(ran)):] {
			if prio[later.job.CustomerID] > prio[h.job.CustomerID] {
				inversions++
				if inversions <= 3 {
					t.Errorf("job %s (priority %d) ran %d jobs before %s (priority %d)", h.job.CustomerID, prio[h.job.CustomerID], later.seq-h.seq, later.job.CustomerID, prio[later.job.CustomerID])
				}
			}
		}
	}
	if inversions > 0 {
		t.Errorf("%d pairs of jobs ran against their priorities", inversions)
	}
}

// checkDeadLetters checks that the producer's job of another kind and its
// message that is no envelope are on q's dead-letter queue, with reasons.
func checkDeadLetters(t *testing.T, url string, q runtime.QueueConfig) {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"wrong-kind":      fmt.Sprintf("job of kind %q on queue %q, whose handler takes %q", emails.SendEmailQueue.Kind, q.Name, q.Kind),
		"not-an-envelope": fmt.Sprintf("message on queue %q is not a valid envelope: invalid envelope: content type \"application/json\"", q.Name),
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(want) > 0 && time.Now().Before(deadline) {
		m, ok, err := ch.Get(q.Name+".dead", true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		prefix, expected := want[m.MessageId]
		if !expected {
			t.Errorf("unexpected dead letter %q: %v", m.MessageId, m.Headers)
			continue
		}
		delete(want, m.MessageId)
		reason, _ := m.Headers["x-queuey-dead-reason"].(string)
		if !strings.HasPrefix(reason, prefix) {
			t.Errorf("dead letter %q: reason %q, want it to start %q", m.MessageId, reason, prefix)
		}
		if qn, _ := m.Headers["x-queuey-queue"].(string); qn != q.Name {
			t.Errorf("dead letter %q: x-queuey-queue %q, want %q", m.MessageId, qn, q.Name)
		}
	}
	for id := range want {
		t.Errorf("message %q was not dead-lettered within 10s", id)
	}
}

// produce runs lang's producer on p and returns the job IDs it printed, in
// plan order, and how long it said the enqueues took.
func produce(ctx context.Context, t *testing.T, lang language, p plan) ([]string, time.Duration) {
	t.Helper()
	in, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := lang.command(ctx)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s producer: %v\n%s", lang.name, err, stderr.String())
	}
	ids := make([]string, len(p.Jobs))
	var took time.Duration
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line struct {
			I       *int    `json:"i"`
			ID      string  `json:"id"`
			Done    bool    `json:"done"`
			Seconds float64 `json:"seconds"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s producer printed %q: %v", lang.name, sc.Text(), err)
		}
		switch {
		case line.Done:
			took = time.Duration(line.Seconds * float64(time.Second))
		case line.I != nil && *line.I >= 0 && *line.I < len(ids):
			ids[*line.I] = line.ID
		}
	}
	for i, id := range ids {
		if id == "" {
			t.Fatalf("%s producer printed no ID for job %d:\n%s", lang.name, i, stderr.String())
		}
	}
	return ids, took
}

func maps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func randomSuffix(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func deleteExchange(url, name string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return
	}
	defer conn.Close()
	if ch, err := conn.Channel(); err == nil {
		_ = ch.ExchangeDelete(name, false, false)
	}
}
