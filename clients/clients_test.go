// Package clients_test runs the producers in other languages end to end,
// as installed packages: the Python one installed with pip into a
// virtual environment of its own, the Node one with npm into a project of
// its own, each from the repository's source, never imported from it. A
// Python or Node program enqueues jobs through its package, on the wire
// format of docs/wire-format.md, and a Go worker handles them.
//
// A language whose package cannot be installed here (no pika and msgpack
// for /usr/bin/python3, no venv, no node or npm, or npm without the
// packages' dependencies in its cache: `make clients` puts them there) is
// skipped, unless CI or QUEUEY_REQUIRE_CLIENTS is set: then it fails. A
// broker is needed as for every broker test (QUEUEY_AMQP_URL).
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
	"go.uber.org/goleak"

	"github.com/queuey/queuey/examples/emails/emails"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// pythonPath is the Python the package is installed for: Debian's, with
// python3-pika and python3-msgpack, which the virtual environment sees
// (--system-site-packages), so that installing needs no package registry.
const pythonPath = "/usr/bin/python3"

// installRoot holds the virtual environment and the Node project the
// packages are installed into, for the whole test binary.
var installRoot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "queuey-clients-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	installRoot = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// vectorsDir is testdata/wire, which the packages' tests read.
func vectorsDir() string {
	d, _ := filepath.Abs(filepath.Join("..", "testdata", "wire"))
	return d
}

// language is a client and how to run its producer program.
type language struct {
	name string
	// install installs the client's package once and returns "" when it
	// can run here, or why not.
	install func() string
	// command runs testdata's producer of this language.
	command func(ctx context.Context) *exec.Cmd
	// window is how many enqueues the producer keeps in flight.
	window int
	// suite runs the client's own tests against the installed package.
	suite func(ctx context.Context) *exec.Cmd
}

// once runs install the first time it is called and returns its result
// every time.
func once(install func() string) func() string {
	var (
		o   sync.Once
		why string
	)
	return func() string {
		o.Do(func() { why = install() })
		return why
	}
}

// run runs name with args in dir, and returns "" or what went wrong with
// its output.
func run(dir, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return ""
}

// copyDir copies the regular files under src to dst, skipping the
// directories named in skip.
func copyDir(src, dst string, skip ...string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if slices.Contains(skip, d.Name()) {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

var (
	venv       = func() string { return filepath.Join(installRoot, "venv") }
	nodeProj   = func() string { return filepath.Join(installRoot, "node") }
	venvPython = func() string { return filepath.Join(venv(), "bin", "python") }
)

// installPython makes a virtual environment that sees Debian's pika and
// msgpack and pip-installs clients/python into it, from a copy (a build
// writes next to its source), with no package index.
var installPython = once(func() string {
	if err := exec.Command(pythonPath, "-c", "import pika, msgpack, venv, ensurepip, setuptools").Run(); err != nil {
		return fmt.Sprintf("%s cannot import pika, msgpack, venv and setuptools (%v): run `make clients` (apt-get install python3-pika python3-msgpack python3-venv python3-setuptools)", pythonPath, err)
	}
	src := filepath.Join(installRoot, "python-src")
	if err := copyDir("python", src, "build", "__pycache__"); err != nil {
		return err.Error()
	}
	if why := run(installRoot, pythonPath, "-m", "venv", "--system-site-packages", venv()); why != "" {
		return why
	}
	return run(installRoot, venvPython(), "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation", src)
})

// installNode packs clients/node as npm would publish it and installs the
// tarball into a project of its own, with the tests and the producer
// beside it.
var installNode = once(func() string {
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed: install Node.js 18 or later and npm, then run `make clients`"
		}
	}
	dir := nodeProj()
	if err := os.MkdirAll(filepath.Join(dir, "test"), 0o755); err != nil {
		return err.Error()
	}
	src, _ := filepath.Abs("node")
	if why := run(dir, "npm", "pack", "--silent", "--pack-destination", dir, src); why != "" {
		return why
	}
	tgz, _ := filepath.Glob(filepath.Join(dir, "queuey-client-*.tgz"))
	if len(tgz) != 1 {
		return fmt.Sprintf("npm pack made %v, want one queuey-client tarball", tgz)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name": "queuey-client-check", "private": true}`), 0o644); err != nil {
		return err.Error()
	}
	if why := run(dir, "npm", "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tgz[0]); why != "" {
		return "installing the packed queuey-client (run `make clients` to fill npm's cache): " + why
	}
	for from, to := range map[string]string{
		filepath.Join("node", "test", "queuey.test.js"): filepath.Join(dir, "test", "queuey.test.js"),
		filepath.Join("testdata", "produce.js"):         filepath.Join(dir, "produce.js"),
	} {
		b, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(to, b, 0o644)
		}
		if err != nil {
			return err.Error()
		}
	}
	return ""
})

// withEnv returns cmd with the vectors' directory and the installed-only
// check in its environment.
func withEnv(cmd *exec.Cmd) *exec.Cmd {
	cmd.Env = append(os.Environ(), "QUEUEY_WIRE_VECTORS="+vectorsDir(), "QUEUEY_REQUIRE_INSTALLED=1")
	return cmd
}

var languages = []language{
	{
		name:    "python",
		install: installPython,
		command: func(ctx context.Context) *exec.Cmd {
			produce, _ := filepath.Abs(filepath.Join("testdata", "produce.py"))
			cmd := exec.CommandContext(ctx, venvPython(), produce)
			cmd.Dir = installRoot
			return cmd
		},
		window: 1,
		suite: func(ctx context.Context) *exec.Cmd {
			tests, _ := filepath.Abs(filepath.Join("python", "tests"))
			cmd := exec.CommandContext(ctx, venvPython(), "-m", "unittest", "discover", "-s", tests, "-t", tests, "-v")
			cmd.Dir = installRoot
			return withEnv(cmd)
		},
	},
	{
		name:    "node",
		install: installNode,
		command: func(ctx context.Context) *exec.Cmd {
			cmd := exec.CommandContext(ctx, "node", "produce.js")
			cmd.Dir = nodeProj()
			return cmd
		},
		window: 64,
		suite: func(ctx context.Context) *exec.Cmd {
			cmd := exec.CommandContext(ctx, "node", "--test", "test/")
			cmd.Dir = nodeProj()
			return withEnv(cmd)
		},
	},
}

// requireClient installs lang's package, or skips t when it cannot be
// installed here, or fails it under CI or QUEUEY_REQUIRE_CLIENTS.
func requireClient(t *testing.T, lang language) {
	t.Helper()
	why := lang.install()
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
	MaxPriority   int       `json:"max_priority"`
	QueueType     string    `json:"queue_type"`
	DelayMode     string    `json:"delay_mode,omitempty"` // empty: the producer's default for QueueType
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
		URL: url, Queue: q.Name, Kind: q.Kind, MaxPriority: q.MaxPriority, QueueType: string(q.QueueType),
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

// ladderGranularity is the granularity of the ladder test: short, so that
// waits of several granularities take a second or so. Its ladders
// ("queuey.ladder.<type>.100ms.*") are shared with the backend's own ladder
// tests, as a ladder is shared in production, and never deleted by a test.
const ladderGranularity = 100 * time.Millisecond

// TestPolyglotLadder: a Go worker on a ladder-mode queue, classic and
// quorum (the quorum one by default: neither the queue nor the producer
// names the mode), runs the jobs that a producer in another language delayed onto
// the delay ladder, each no earlier than due: its delay rounded up to the
// granularity after its enqueue. The worker runs before the producer
// starts, so a job published at once, or held too short, would run early.
// Two delayed jobs are of high priority (5 and 9), one of priority 4: a
// queue of the test's own, bound to every level exchange for the queue's
// waits, sees each wait's routing key, which must be the one of
// docs/wire-format.md: bits "h" for the high ones on a split ladder
// (quorum, on RabbitMQ 4.x), "1" everywhere else.
func TestPolyglotLadder(t *testing.T) {
	for _, lang := range languages {
		for _, qt := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
			t.Run(lang.name+"/"+string(qt), func(t *testing.T) { runLadder(t, lang, qt) })
		}
	}
}

func runLadder(t *testing.T, lang language, qt runtime.QueueType) {
	url := brokertest.Require(t)
	requireClient(t, lang)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	q := emails.ChargeCardQueue
	q.Name = fmt.Sprintf("polyglot.ladder.%s.%s.%s", lang.name, qt, randomSuffix(t))
	q.QueueType = qt
	// A quorum queue is on the ladder by default, in Go and in the
	// producers alike: neither the queue nor the plan names the mode.
	mode := runtime.DelayLadder
	if qt == runtime.QueueQuorum {
		mode = ""
	}
	q.Delay = mode
	q.MaxPriority = runtime.DefaultMaxPriority
	t.Cleanup(func() { brokertest.DeleteQueues(url, q.Name, q.Name+".dead") })
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{Granularity: ladderGranularity, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Declare(ctx, q); err != nil {
		t.Fatal(err)
	}

	// Delays in ms: none, one granularity, rounded up (1 → 100, 150 →
	// 200, 1250 → 1300), several bits set (700 = 111 granularities),
	// exactly a power of two (800 = 1000 in granularities).
	delays := []int64{0, 100, 1, 150, 700, 800, 1250, 0, 300, 1000}
	jobs := jobsOf(len(delays), false)
	for i := range jobs {
		jobs[i].DelayMS = delays[i]
	}
	// Job 3 (150ms) is of priority 5 already; job 4 (700ms) is of the
	// highest, job 5 (800ms) of 4, the highest normal one.
	jobs[4].Priority, jobs[5].Priority = 9, 4
	obs := observeLadder(t, url, qt, q.Name)

	var (
		mu   sync.Mutex
		got  = make(map[string]handled, len(jobs))
		done = make(chan struct{})
	)
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second))
	runtime.Handle(w, q, func(ctx context.Context, job emails.ChargeCard) error {
		info, _ := runtime.InfoFromContext(ctx)
		mu.Lock()
		defer mu.Unlock()
		if _, dup := got[info.ID]; !dup {
			got[info.ID] = handled{job: job, info: info, at: time.Now()}
			if len(got) == len(jobs) {
				close(done)
			}
		}
		return nil
	})
	stop := brokertest.Run(t, w)

	p := plan{
		URL: url, Queue: q.Name, Kind: q.Kind, MaxPriority: q.MaxPriority, QueueType: string(qt),
		DelayMode: string(mode), GranularityMS: ladderGranularity.Milliseconds(), Window: lang.window, Jobs: jobs,
	}
	ids, _ := produce(ctx, t, lang, p)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		mu.Lock()
		t.Fatalf("handled %d of %d jobs within 30s", len(got), len(jobs))
	}
	stop()

	var late []string
	for i, j := range jobs {
		h, ok := got[ids[i]]
		if !ok {
			t.Errorf("job %d (%s) was not handled", i, ids[i])
			continue
		}
		if h.job != j.job {
			t.Errorf("job %d: handled %+v, want %+v", i, h.job, j.job)
		}
		if h.info.Attempt != 1 || h.info.Queue != q.Name || !maps(h.info.Headers, j.Headers) {
			t.Errorf("job %d: attempt %d on %q with headers %v, want attempt 1 on %q with %v", i, h.info.Attempt, h.info.Queue, h.info.Headers, q.Name, j.Headers)
		}
		if j.DelayMS == 0 {
			continue
		}
		// The delay rounded up to the granularity.
		due := (time.Duration(j.DelayMS)*time.Millisecond + ladderGranularity - 1) / ladderGranularity * ladderGranularity
		waited := h.at.Sub(h.info.EnqueuedAt)
		if waited < due {
			t.Errorf("job %d, delayed %dms (due %v after its enqueue at %v granularity), ran %v after", i, j.DelayMS, due, ladderGranularity, waited)
		}
		late = append(late, fmt.Sprintf("%dms:+%v", j.DelayMS, (waited-due).Round(time.Millisecond)))
	}
	t.Logf("%s on a %s ladder, lateness (delay:+late): %s", lang.name, qt, strings.Join(late, " "))

	keys := obs.keys(t)
	high := 0
	for i, j := range jobs {
		if j.DelayMS == 0 {
			if len(keys[ids[i]]) > 0 {
				t.Errorf("job %d, not delayed, went onto the ladder with keys %v", i, keys[ids[i]])
			}
			continue
		}
		want := obs.key(time.Duration(j.DelayMS)*time.Millisecond, j.Priority)
		if len(keys[ids[i]]) == 0 {
			t.Errorf("job %d (priority %d, %dms): no wait passed the ladder's level exchanges, want key %s", i, j.Priority, j.DelayMS, want)
		}
		for _, k := range keys[ids[i]] {
			if k != want {
				t.Errorf("job %d (priority %d, %dms) on a ladder split=%v: key %s, want %s", i, j.Priority, j.DelayMS, obs.split, k, want)
			}
		}
		if strings.Contains(want, "h.") {
			high++
		}
	}
	if obs.split && high != 2 {
		t.Errorf("%d waits of high priority written h on a split ladder, want 2", high)
	}
	t.Logf("%s on a %s ladder of broker %s: split %v, %d waits written h", lang.name, qt, obs.version, obs.split, high)
}

// ladderObserver is a queue of a test's own, bound to every level exchange
// of the ladder for the waits of one queue: it takes a copy of each wait
// at each level it passes, with the routing key its producer wrote.
type ladderObserver struct {
	ch      *amqp.Channel
	queue   string // the observer's
	name    string // the ladder-mode queue's
	version string // the broker's, from the connection's server properties
	split   bool   // quorum on a 4.x broker
	levels  int
}

func observeLadder(t *testing.T, url string, qt runtime.QueueType, name string) *ladderObserver {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	version, _ := conn.Properties["version"].(string)
	major, _, _ := strings.Cut(version, ".")
	m, err := strconv.Atoi(major)
	if err != nil {
		t.Fatalf("broker version %q: %v", version, err)
	}
	// Exclusive: the broker deletes it with the connection.
	oq, err := ch.QueueDeclare("", false, true, true, false, amqp.Table{"x-queue-type": "classic"})
	if err != nil {
		t.Fatal(err)
	}
	o := &ladderObserver{ch: ch, queue: oq.Name, name: name, version: version, split: qt == runtime.QueueQuorum && m >= 4, levels: waits.Levels(ladderGranularity)}
	prefix := fmt.Sprintf("queuey.ladder.%s.%dms", qt, ladderGranularity.Milliseconds())
	for l := range o.levels {
		if err := ch.QueueBind(oq.Name, "#."+name, fmt.Sprintf("%s.%02d", prefix, l), false, nil); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// key is the routing key of docs/wire-format.md for a wait of delay and
// priority onto the observed queue: its granularities' bits, most
// significant first, set ones "h" on a split ladder at priority 5 and
// above, then the name.
func (o *ladderObserver) key(delay time.Duration, priority int) string {
	units := max((delay+ladderGranularity-1)/ladderGranularity, 1)
	one := "1"
	if o.split && priority >= 5 {
		one = "h"
	}
	var words []string
	for i := o.levels - 1; i >= 0; i-- {
		if units>>i&1 == 1 {
			words = append(words, one)
		} else {
			words = append(words, "0")
		}
	}
	return strings.Join(words, ".") + "." + o.name
}

// keys takes what the observer holds: the routing keys of each wait, by
// its message id. A wait is copied at each level exchange it passes before
// its job reaches the worker, so once the jobs ran the copies are all in.
func (o *ladderObserver) keys(t *testing.T) map[string][]string {
	t.Helper()
	keys := map[string][]string{}
	for {
		d, ok, err := o.ch.Get(o.queue, true)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return keys
		}
		keys[d.MessageId] = append(keys[d.MessageId], d.RoutingKey)
	}
}

// TestPolyglotQueueRules: the queue's config rules the jobs a producer in
// another language enqueues. Onto a queue of max_attempts=3 and
// max_priority=3, each producer, told neither, enqueues a job that always
// fails, a good one, and one at priority 9, which its package takes (it
// was told the default max_priority, 10): the failing job runs 3 times,
// not the 5 the package writes in its body, each run told 3, and is
// dead-lettered after attempt 3 of 3; the job of priority 9 never reaches
// the handler and is dead-lettered with a reason that says why; the good
// one runs once, told the queue it came from.
func TestPolyglotQueueRules(t *testing.T) {
	for _, lang := range languages {
		t.Run(lang.name, func(t *testing.T) { runRules(t, lang) })
	}
}

func runRules(t *testing.T, lang language) {
	url := brokertest.Require(t)
	requireClient(t, lang)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q := emails.ChargeCardQueue
	q.Name = fmt.Sprintf("polyglot.rules.%s.%s", lang.name, randomSuffix(t))
	q.MaxAttempts, q.MaxPriority = 3, 3
	q.RetryBase, q.RetryMax = time.Second, time.Second
	q.Prefetch, q.Concurrency = 1, 1
	t.Cleanup(func() { brokertest.DeleteQueues(url, q.Name, q.Name+".dead", q.Name+".retry.1000") })
	b, err := rabbitmq.Dial(ctx, url, rabbitmq.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Declare(ctx, q); err != nil {
		t.Fatal(err)
	}
	job := func(customer string, priority int) planJob {
		return planJob{Payload: map[string]any{"CustomerID": customer, "Cents": 1, "Currency": "EUR"}, Priority: priority}
	}
	p := plan{
		URL: url, Queue: q.Name, Kind: q.Kind, MaxPriority: runtime.DefaultMaxPriority, QueueType: string(q.QueueType),
		DelayMode: string(runtime.DelayQueue), GranularityMS: 1000, Window: 1,
		Jobs: []planJob{job("fails", 0), job("good", 2), job("priority-9", 9)},
	}
	ids, _ := produce(ctx, t, lang, p)

	runs := make(chan runtime.Info, 10)
	w := runtime.NewWorker(b, runtime.WithShutdownTimeout(10*time.Second))
	runtime.Handle(w, q, func(ctx context.Context, job emails.ChargeCard) error {
		info, _ := runtime.InfoFromContext(ctx)
		runs <- info
		if job.CustomerID == "fails" {
			return errors.New("card declined")
		}
		return nil
	})
	stop := brokertest.Run(t, w)
	defer stop()
	got := map[string][]runtime.Info{}
	for len(got[ids[0]]) < 3 || len(got[ids[1]]) < 1 {
		select {
		case info := <-runs:
			got[info.ID] = append(got[info.ID], info)
		case <-time.After(30 * time.Second):
			t.Fatalf("runs within 30s: %v", got)
		}
	}
	letters := map[string]amqp.Delivery{}
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	eventually.Wait(30*time.Second, func() bool {
		m, ok, err := ch.Get(q.Name+".dead", true)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			letters[m.MessageId] = m
		}
		return len(letters) >= 2
	})
	stop()
	for id, infos := range got {
		for _, info := range infos {
			if info.MaxAttempts != 3 || info.Queue != q.Name {
				t.Errorf("job %s told max attempts %d and queue %q, want 3 and %q", id, info.MaxAttempts, info.Queue, q.Name)
			}
		}
	}
	if n := len(got[ids[0]]); n != 3 {
		t.Errorf("the failing job ran %d times, want the queue's 3", n)
	}
	if n := len(got[ids[1]]); n != 1 {
		t.Errorf("the good job ran %d times, want once", n)
	}
	if n := len(got[ids[2]]); n != 0 {
		t.Errorf("the job of priority 9 ran %d times, want never", n)
	}
	if m, ok := letters[ids[0]]; !ok || m.Headers["x-queuey-attempt"] != int64(3) || m.Headers["x-queuey-max-attempts"] != int64(3) {
		t.Errorf("the failing job's dead letter: %v (found %v), want attempt 3 of 3", m.Headers, ok)
	}
	want := fmt.Sprintf("job %q on queue %q: priority 9, above the queue's max_priority=3", ids[2], q.Name)
	if m, ok := letters[ids[2]]; !ok || !strings.HasPrefix(fmt.Sprint(m.Headers["x-queuey-dead-reason"]), want) {
		t.Errorf("the job of priority 9: dead letter %v (found %v), want a reason starting %q", m.Headers["x-queuey-dead-reason"], ok, want)
	}
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
	eventually.Wait(10*time.Second, func() bool {
		for len(want) > 0 {
			m, ok, err := ch.Get(q.Name+".dead", true)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				return false
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
		return true
	})
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
