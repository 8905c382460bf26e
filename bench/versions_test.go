package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
)

// BrokersEnv lists the AMQP URLs, space-separated, of the brokers that
// BenchmarkBrokers compares; unset, it runs on the broker under test
// alone. make bench-versions sets it to the 3.x and 4.x brokers.
const BrokersEnv = "QUEUEY_BENCH_BROKERS"

// row is one kind of run in a sitting, made afresh each round.
type row struct {
	group string // what the row is compared within: a broker, a queue version
	name  string // plain or queuey, and its shape
	run   func(ctx context.Context, round int) (e2e.Span, error)
}

// versionShapes are the sides BenchmarkBrokers and BenchmarkQueueVersion
// run in each group, on queues whose names start with prefix: the two
// shapes of BenchmarkSync and BenchmarkBatch, each the plain loop on a
// queue without priorities and queuey at max_priority=0 (the plain loop's
// queue) and 10 (the annotation's default).
func versionShapes(group, amqpURL, prefix string) []row {
	meter := e2e.BrokerMeter(amqpURL)
	name := func(what string, round int) string {
		return fmt.Sprintf("%s%s.%d.%d", prefix, what, time.Now().UnixNano(), round)
	}
	plainRun := func(window int) func(context.Context, int) (e2e.Span, error) {
		return func(ctx context.Context, round int) (e2e.Span, error) {
			return e2e.Plain{URL: amqpURL, Queue: name("plain", round), Jobs: jobs, Window: window, Prefetch: prefetch, Meter: meter}.Run(ctx)
		}
	}
	queueyRun := func(level int, shape func(*e2e.Queuey)) func(context.Context, int) (e2e.Span, error) {
		return func(ctx context.Context, round int) (e2e.Span, error) {
			q := e2e.Queuey{URL: amqpURL, Queue: name("queuey", round), Jobs: jobs, Prefetch: prefetch, MaxPriority: configPriority(level), Meter: meter}
			shape(&q)
			return q.Run(ctx)
		}
	}
	sync := func(q *e2e.Queuey) { q.Producers = 64 }
	batch := func(q *e2e.Queuey) { q.Batch = 1000 }
	return []row{
		{group, "sync: plain, 64 confirms in flight", plainRun(64)},
		{group, "sync: queuey, max_priority=0", queueyRun(0, sync)},
		{group, "sync: queuey, max_priority=10", queueyRun(10, sync)},
		{group, "batch: plain, 1024 confirms in flight", plainRun(1024)},
		{group, "batch: queuey, max_priority=0", queueyRun(0, batch)},
		{group, "batch: queuey, max_priority=10", queueyRun(10, batch)},
	}
}

// BenchmarkBrokers runs queuey and the plain loop (versionShapes) on each
// broker that QUEUEY_BENCH_BROKERS names, in one sitting: -rounds rounds,
// each running every side of every broker once, in an order that rotates
// from round to round. It prints each side's median rate with its range
// and the broker's CPU per job, queuey/plain on each broker, and each
// broker's figures against the first's.
//
//	make bench-versions
func BenchmarkBrokers(b *testing.B) {
	urls := strings.Fields(os.Getenv(BrokersEnv))
	if len(urls) == 0 {
		urls = []string{amqpURL()}
	}
	var sides []row
	var groups []string
	for i, u := range urls {
		v, err := brokerVersion(u)
		if err != nil {
			b.Fatalf("%s: broker %d: %v", BrokersEnv, i+1, err)
		}
		g := "RabbitMQ " + v
		groups = append(groups, g)
		sides = append(sides, versionShapes(g, u, "queuey-bench.brokers.")...)
	}
	start := time.Now()
	var spans [][]e2e.Span
	for b.Loop() {
		spans = sitting(b, sides)
	}
	printSitting(b, start, sides, spans, groups)
	b.ReportMetric(0, "ns/op")
}

// BenchmarkQueueVersion runs queuey and the plain loop (versionShapes) on
// classic queues of storage version 1 and 2 on the broker under test, in
// one sitting, as BenchmarkBrokers does with brokers. The version comes
// from a policy (queue-version) on each group's queue-name prefix, set
// for the sitting and removed after it, as an operator sets it; queuey
// declares its queues as always. It runs on RabbitMQ 3.10 to 3.13: 4.x
// has version 2 alone.
//
//	go test -run '^$' -bench QueueVersion -benchtime 1x ./bench/
func BenchmarkQueueVersion(b *testing.B) {
	requireBroker(b)
	v, err := brokerVersion(amqpURL())
	if err != nil {
		b.Fatal(err)
	}
	if !strings.HasPrefix(v, "3.") {
		b.Skipf("RabbitMQ %s: classic queues have storage version 2 alone", v)
	}
	m := managementAPI{base: brokertest.ManagementURL()}
	var sides []row
	var groups []string
	for _, version := range []int{1, 2} {
		prefix := fmt.Sprintf("queuey-bench.cqv%d.%d.", version, time.Now().UnixNano())
		policy := strings.TrimSuffix(prefix, ".")
		if err := m.put("api/policies/%2F/"+url.PathEscape(policy), map[string]any{
			"pattern":    "^" + regexp.QuoteMeta(prefix),
			"apply-to":   "queues",
			"priority":   1000,
			"definition": map[string]any{"queue-version": version},
		}); err != nil {
			b.Fatalf("set policy %s: %v", policy, err)
		}
		b.Cleanup(func() {
			if err := m.delete("api/policies/%2F/" + url.PathEscape(policy)); err != nil {
				b.Errorf("remove policy %s: %v", policy, err)
			}
		})
		// The queues a run declares must have the version: checked on a
		// queue of each kind the sitting declares, before it and after.
		check := func() {
			for _, level := range []int{0, 10} {
				if err := m.checkVersion(prefix+fmt.Sprintf("check.%d", level), level, version); err != nil {
					b.Fatal(err)
				}
			}
		}
		check()
		defer check()
		g := fmt.Sprintf("RabbitMQ %s, classic queue version %d", v, version)
		groups = append(groups, g)
		sides = append(sides, versionShapes(g, amqpURL(), prefix)...)
	}
	start := time.Now()
	var spans [][]e2e.Span
	for b.Loop() {
		spans = sitting(b, sides)
	}
	printSitting(b, start, sides, spans, groups)
	b.ReportMetric(0, "ns/op")
}

// brokerVersion is the version the broker at amqpURL gives when dialled.
func brokerVersion(amqpURL string) (string, error) {
	c, err := amqp.Dial(amqpURL)
	if err != nil {
		return "", err
	}
	defer c.Close()
	v, ok := c.Properties["version"].(string)
	if !ok {
		return "", fmt.Errorf("the broker gives no version")
	}
	return v, nil
}

// sitting runs each side once a round, -rounds rounds, each round in an
// order that starts one side further on, logs each run and returns each
// side's spans.
func sitting(b *testing.B, sides []row) [][]e2e.Span {
	spans := make([][]e2e.Span, len(sides))
	for r := range *rounds {
		for k := range sides {
			i := (k + r) % len(sides)
			s := sides[i]
			sp := run(b, s.group+" "+s.name, func(ctx context.Context) (e2e.Span, error) { return s.run(ctx, r) })
			// To stdout as it ends: a benchmark's log keeps its first lines alone.
			fmt.Printf("round %d | %s | %s | %.0f jobs/s | broker %.0f µs/job | client %.0f µs/job\n", r+1, s.group, s.name, sp.Rate(), sp.PerJob(sp.ServerCPU), sp.PerJob(sp.ClientCPU))
			spans[i] = append(spans[i], sp)
		}
	}
	return spans
}

// printSitting prints, as Markdown tables: each side's median rate, its
// range, and the medians of broker and client CPU per job; queuey/plain
// within each group, the ratio of the medians and the range of the
// rounds' own ratios; and each group's medians against the first group's.
func printSitting(b *testing.B, start time.Time, sides []row, spans [][]e2e.Span, groups []string) {
	rate := e2e.Span.Rate
	brokerCPU := func(s e2e.Span) float64 { return s.PerJob(s.ServerCPU) }
	clientCPU := func(s e2e.Span) float64 { return s.PerJob(s.ClientCPU) }
	var out bytes.Buffer
	fmt.Fprintf(&out, "\n%d jobs of %d bytes a run, prefetch %d, %d rounds, %s to %s\n\n", jobs, e2e.PayloadSize, prefetch, *rounds,
		start.UTC().Format("2006-01-02 15:04"), time.Now().UTC().Format("15:04 MST"))
	tw := tabwriter.NewWriter(&out, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| where\t| side\t| median jobs/s\t| min–max\t| broker CPU µs/job (min–max)\t| client CPU µs/job\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---:\t|---:\t|---:\t|---:\t|")
	for i, s := range sides {
		lo, hi := rangeOf(spans[i], rate)
		clo, chi := rangeOf(spans[i], brokerCPU)
		fmt.Fprintf(tw, "| %s\t| %s\t| %.0f\t| %.0f–%.0f\t| %.0f (%.0f–%.0f)\t| %.0f\t|\n", s.group, s.name,
			e2e.MedianOf(spans[i], rate), lo, hi, e2e.MedianOf(spans[i], brokerCPU), clo, chi, e2e.MedianOf(spans[i], clientCPU))
	}
	tw.Flush()

	// Within each group, queuey against the plain loop of its shape.
	fmt.Fprintln(&out)
	tw = tabwriter.NewWriter(&out, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| where\t| queuey/plain\t| ratio of medians\t| rounds' ratios, min–max\t| broker CPU, queuey/plain\t|")
	fmt.Fprintln(tw, "|---\t|---\t|---:\t|---:\t|---:\t|")
	var plainAt int
	for i, s := range sides {
		shape, who, _ := strings.Cut(s.name, ": ")
		if strings.HasPrefix(who, "plain") {
			plainAt = i
			continue
		}
		lo, hi := minMax(paired(spans[i], spans[plainAt], rate))
		fmt.Fprintf(tw, "| %s\t| %s: %s\t| %.2f\t| %.2f–%.2f\t| %.2f\t|\n", s.group, shape, who,
			e2e.MedianOf(spans[i], rate)/e2e.MedianOf(spans[plainAt], rate), lo, hi,
			e2e.MedianOf(spans[i], brokerCPU)/e2e.MedianOf(spans[plainAt], brokerCPU))
	}
	tw.Flush()

	// Each group against the first, side by side.
	if len(groups) > 1 {
		per := len(sides) / len(groups)
		fmt.Fprintln(&out)
		tw = tabwriter.NewWriter(&out, 0, 0, 1, ' ', 0)
		fmt.Fprintf(tw, "| against %s\t| side\t| jobs/s\t| rounds' ratios, min–max\t| broker CPU per job\t| rounds' ratios, min–max\t|\n", groups[0])
		fmt.Fprintln(tw, "|---\t|---\t|---:\t|---:\t|---:\t|---:\t|")
		for g := 1; g < len(groups); g++ {
			for k := range per {
				i, j := g*per+k, k
				rlo, rhi := minMax(paired(spans[i], spans[j], rate))
				clo, chi := minMax(paired(spans[i], spans[j], brokerCPU))
				fmt.Fprintf(tw, "| %s\t| %s\t| %.2f\t| %.2f–%.2f\t| %.2f\t| %.2f–%.2f\t|\n", groups[g], sides[i].name,
					e2e.MedianOf(spans[i], rate)/e2e.MedianOf(spans[j], rate), rlo, rhi,
					e2e.MedianOf(spans[i], brokerCPU)/e2e.MedianOf(spans[j], brokerCPU), clo, chi)
			}
		}
		tw.Flush()
	}
	fmt.Fprintln(&out, "\nBroker CPU is the broker's process and its children from /proc/<pid>/stat, with whatever else it served meanwhile.")
	if _, err := os.Stdout.Write(out.Bytes()); err != nil {
		b.Fatal(err)
	}
}

// paired returns f of a over f of b, round by round: each ratio of two
// runs made in the same minutes.
func paired(a, b []e2e.Span, f func(e2e.Span) float64) []float64 {
	v := make([]float64, min(len(a), len(b)))
	for r := range v {
		v[r] = f(a[r]) / f(b[r])
	}
	return v
}

func rangeOf(spans []e2e.Span, f func(e2e.Span) float64) (lo, hi float64) {
	v := make([]float64, len(spans))
	for i, s := range spans {
		v[i] = f(s)
	}
	return minMax(v)
}

func minMax(v []float64) (lo, hi float64) {
	if len(v) == 0 {
		return 0, 0
	}
	lo, hi = v[0], v[0]
	for _, x := range v[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// managementAPI calls the broker's management HTTP API at base (with its
// credentials).
type managementAPI struct{ base string }

// mgmtHTTP keeps no idle connection, so that none outlives the benchmarks.
var mgmtHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func (m managementAPI) do(method, path string, body any) ([]byte, error) {
	var r io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(j)
	}
	u, err := url.Parse(m.base)
	if err != nil {
		return nil, err
	}
	pass, _ := u.User.Password()
	user := u.User.Username()
	u.User = nil
	req, err := http.NewRequest(method, strings.TrimSuffix(u.String(), "/")+"/"+path, r)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(user, pass)
	req.Header.Set("Content-Type", "application/json")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := mgmtHTTP.Do(req.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, out)
	}
	return out, nil
}

func (m managementAPI) put(path string, body any) error {
	_, err := m.do(http.MethodPut, path, body)
	return err
}

func (m managementAPI) delete(path string) error {
	_, err := m.do(http.MethodDelete, path, nil)
	return err
}

// checkVersion declares a durable classic queue name, at maxPriority
// levels when above zero, and reports whether the broker stores it at
// version; the queue is deleted after. The management API gives a
// priority queue's version as the sum over its levels (0 to maxPriority),
// each a queue of its own.
func (m managementAPI) checkVersion(name string, maxPriority, version int) error {
	c, err := amqp.Dial(amqpURL())
	if err != nil {
		return err
	}
	defer c.Close()
	defer brokertest.DeleteQueues(amqpURL(), name)
	ch, err := c.Channel()
	if err != nil {
		return err
	}
	var args amqp.Table
	if maxPriority > 0 {
		args = amqp.Table{"x-max-priority": int32(maxPriority)}
	}
	if _, err := ch.QueueDeclare(name, true, false, false, false, args); err != nil {
		return err
	}
	want := version * (maxPriority + 1)
	var got struct {
		Policy  string `json:"policy"`
		Backing struct {
			Version int `json:"version"`
		} `json:"backing_queue_status"`
	}
	// The management API shows a new queue's state once its statistics
	// have been collected: wait for them, up to a bound.
	for deadline := time.Now().Add(30 * time.Second); ; {
		body, err := m.do(http.MethodGet, "api/queues/%2F/"+url.PathEscape(name), nil)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(body, &got); err != nil {
			return err
		}
		if got.Backing.Version == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queue %s (max_priority=%d) is stored at version %d by policy %q, want %d", name, maxPriority, got.Backing.Version, got.Policy, want)
		}
		time.Sleep(200 * time.Millisecond) // polling the API, with a deadline
	}
}
