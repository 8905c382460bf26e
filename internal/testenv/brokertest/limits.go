package brokertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// LimitQueues are the names of the broker queues that hold a limited
// queue's global limits, as the RabbitMQ backend names them (the names
// are fixed: every worker derives them from the queue's name alone).
type LimitQueues struct {
	LimitTokens, LimitLedger, LimitLock string
	RateTokens, RateLedger, RateLock    string
	// RateReturn is the Rate's return queue for a period of a second;
	// RateReturns are those of every period.
	RateReturn  string
	RateReturns []string
}

// LimitQueuesOf returns the names of the queues that hold queue q's
// global limits (package rabbitmq's tests check that it names them as
// the backend does).
func LimitQueuesOf(q string) LimitQueues {
	l := LimitQueues{
		LimitTokens: "queuey.limit." + q,
		RateTokens:  "queuey.rate." + q,
	}
	l.LimitLedger, l.LimitLock = "queuey.limit-ledger."+q, "queuey.limit-lock."+q
	l.RateLedger, l.RateLock = "queuey.rate-ledger."+q, "queuey.rate-lock."+q
	l.RateReturn = "queuey.rate-s." + q
	l.RateReturns = []string{"queuey.rate-s." + q, "queuey.rate-m." + q, "queuey.rate-h." + q}
	return l
}

// All is every name of l, for deleting them.
func (l LimitQueues) All() []string {
	return append([]string{l.LimitTokens, l.LimitLedger, l.LimitLock, l.RateTokens, l.RateLedger, l.RateLock}, l.RateReturns...)
}

// Ready returns how many ready messages queue name holds on the broker at
// url, by a passive declare on a connection of its own.
func Ready(url, name string) (int, error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, err
	}
	q, err := ch.QueueDeclarePassive(name, true, false, false, false, nil)
	if err != nil {
		return 0, fmt.Errorf("inspect %q: %w", name, err)
	}
	return q.Messages, nil
}

// Counts returns the ready and unacked messages of queue name (on the
// default virtual host) as the management API at ManagementURL says
// them: the broker's figures of its last statistics tick, seconds old.
func Counts(ctx context.Context, name string) (ready, unacked int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(ManagementURL(), "/")+"/api/queues/%2F/"+url.PathEscape(name), nil)
	if err != nil {
		return 0, 0, err
	}
	// No connection kept alive: tests check that no goroutine outlives
	// them.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, 0, fmt.Errorf("management API: queue %q: %s: %s", name, resp.Status, body)
	}
	var q struct {
		Ready   *int `json:"messages_ready"`
		Unacked *int `json:"messages_unacknowledged"`
	}
	if err := json.Unmarshal(body, &q); err != nil {
		return 0, 0, fmt.Errorf("management API: queue %q: %w", name, err)
	}
	if q.Ready == nil || q.Unacked == nil {
		return 0, 0, fmt.Errorf("management API: queue %q: no message counts yet", name)
	}
	return *q.Ready, *q.Unacked, nil
}

// ReadLedger returns the count of tokens minted that limit ledger queue
// name holds, on the broker at url, and how many ledger messages it holds
// (one when all is well). It takes the messages on a connection of its own
// and closes it, which puts them back: call it while no worker reconciles
// the limit (a reconcile that finds the ledger taken waits for it a
// moment only).
func ReadLedger(url, name string) (count, messages int, err error) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return 0, 0, err
	}
	count = -1
	for {
		m, ok, err := ch.Get(name, false)
		if err != nil {
			return 0, 0, fmt.Errorf("read ledger %q: %w", name, err)
		}
		if !ok {
			break
		}
		messages++
		n, err := strconv.Atoi(strings.TrimSpace(string(m.Body)))
		if err != nil {
			return 0, 0, fmt.Errorf("ledger %q holds %q, not a count", name, m.Body)
		}
		if count >= 0 && n != count {
			return 0, 0, fmt.Errorf("ledger %q holds two counts, %d and %d", name, count, n)
		}
		count = n
	}
	if messages == 0 {
		return 0, 0, fmt.Errorf("ledger %q is empty", name)
	}
	return count, messages, nil
}

// Runs follows the runs of a limited queue's jobs across every worker of
// a test: how many run at once, and when each began. From a Mark on, the
// runs that began after it are counted apart as well: a fault's runs from
// before it may go on after it without their tokens (a worker's lost
// connection gave them back). It is safe for concurrent use.
type Runs struct {
	mu         sync.Mutex
	mark       time.Time
	running    int // every run going on
	maxRunning int
	maxAt      time.Time
	after      int // runs going on that began after mark
	maxAfter   int
	begins     []RunBegin
}

// RunBegin is when a run began, and on which worker.
type RunBegin struct {
	At     time.Time
	Worker string
}

// Begin records a run that begins now on worker, and returns what ends
// it.
func (r *Runs) Begin(worker string) (end func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	r.begins = append(r.begins, RunBegin{At: now, Worker: worker})
	r.running++
	if r.running > r.maxRunning {
		r.maxRunning, r.maxAt = r.running, now
	}
	counted := !r.mark.IsZero()
	if counted {
		r.after++
		r.maxAfter = max(r.maxAfter, r.after)
	}
	mark := r.mark
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.running--
		if counted && mark.Equal(r.mark) {
			r.after--
		}
	}
}

// Mark starts counting afresh the runs that begin from now on, and
// returns now.
func (r *Runs) Mark() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mark = time.Now()
	r.after, r.maxAfter = 0, 0
	return r.mark
}

// RunStats is what Runs saw.
type RunStats struct {
	Running    int       // runs going on now
	MaxRunning int       // the most at once, over every run
	MaxAt      time.Time // when MaxRunning was first reached
	After      int       // runs going on now that began after the mark
	MaxAfter   int       // the most at once of the runs that began after the mark
	Begun      int       // runs begun
	BegunAfter int       // runs begun after the mark
}

func (s RunStats) String() string {
	return fmt.Sprintf("%d running (at most %d at once), %d begun; since the mark %d running (at most %d at once), %d begun",
		s.Running, s.MaxRunning, s.Begun, s.After, s.MaxAfter, s.BegunAfter)
}

// Stats returns what r saw so far.
func (r *Runs) Stats() RunStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := RunStats{Running: r.running, MaxRunning: r.maxRunning, MaxAt: r.maxAt, After: r.after, MaxAfter: r.maxAfter, Begun: len(r.begins)}
	for _, b := range r.begins {
		if !r.mark.IsZero() && b.At.After(r.mark) {
			s.BegunAfter++
		}
	}
	return s
}

// BegunAfter returns the runs that began after t, oldest first.
func (r *Runs) BegunAfter(t time.Time) []RunBegin {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []RunBegin
	for _, b := range r.begins {
		if b.At.After(t) {
			out = append(out, b)
		}
	}
	return out
}

// WorkersAfter reports whether each of workers began a run after t.
func (r *Runs) WorkersAfter(t time.Time, workers ...string) bool {
	seen := map[string]bool{}
	for _, b := range r.BegunAfter(t) {
		seen[b.Worker] = true
	}
	for _, w := range workers {
		if !seen[w] {
			return false
		}
	}
	return true
}
