package cli_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/internal/testenv/eventually"
)

// limitQueues makes by hand the queues that hold queue q's global limits,
// as their names are (rabbitmq/limit_names.go), and deletes them when t
// ends: a Limit of 3 tokens, one held by a job; a Rate of 5/s, its five
// tokens ready; and the lease of one limit key, held, with one job
// waiting for it.
func limitQueues(t *testing.T, url, q string) {
	t.Helper()
	limit, rate, key := "queuey.limit."+q, "queuey.rate."+q, "queuey.lease.key."+strconv.Itoa(len(q))+"."+q+".customer-7"
	limitLedger, rateLedger, rateReturn := "queuey.limit-ledger."+q, "queuey.rate-ledger."+q, "queuey.rate-s."+q
	names := []string{limit, limitLedger, rate, rateLedger, rateReturn, key}
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			return
		}
		defer conn.Close()
		for _, n := range names {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(n, false, false, false)
				ch.Close()
			}
		}
	})
	ch := rawChannel(t, url)
	for _, n := range names {
		var args amqp.Table
		switch n {
		case rateReturn:
			args = amqp.Table{"x-message-ttl": int64(1000), "x-dead-letter-exchange": "", "x-dead-letter-routing-key": rate}
		case key:
			args = amqp.Table{"x-single-active-consumer": true}
		}
		if _, err := ch.QueueDeclare(n, true, false, false, false, args); err != nil {
			t.Fatalf("declare %s: %v", n, err)
		}
	}
	for n, count := range map[string]int{limit: 3, limitLedger: 1, rate: 5, rateLedger: 1, key: 1} {
		for range count {
			if err := ch.PublishWithContext(ctxT(t), "", n, false, false, amqp.Publishing{DeliveryMode: amqp.Persistent, Body: []byte("token")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually.True(t, wait, func() bool { return queueDepth(t, ch, limit) == 3 && queueDepth(t, ch, key) == 1 }, "the limit's queues filled")
	if _, ok, err := rawChannel(t, url).Get(limit, false); err != nil || !ok {
		t.Fatalf("take a token: %v, %v", ok, err)
	}
	var first <-chan amqp.Delivery
	for i := range 2 {
		c := rawChannel(t, url)
		if err := c.Qos(1, 0, false); err != nil {
			t.Fatal(err)
		}
		d, err := c.Consume(key, "", false, false, false, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = d
		}
	}
	select {
	case <-first:
	case <-time.After(wait):
		t.Fatal("the key's lease was not delivered")
	}
}

// TestBrokerQueuesLimits: queuey queues shows the global limits of a
// limited queue, found by the queues that hold them, as a table and in
// --json, or says that they could not be read without the management
// API; an unlimited queue has none.
func TestBrokerQueuesLimits(t *testing.T) {
	bq := newBrokerQueue(t)
	limitQueues(t, bq.url, bq.q.Name)
	type limit struct {
		Queue       string  `json:"queue"`
		Limit       *int    `json:"limit"`
		InUse       *int    `json:"in_use"`
		Waiting     *int    `json:"waiting"`
		Rate        *string `json:"rate"`
		RateReady   *int    `json:"rate_ready"`
		RateWaiting *int    `json:"rate_waiting"`
		KeysHeld    *int    `json:"keys_held"`
		KeysWaiting *int    `json:"keys_waiting"`
	}
	show := func(p *int) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprint(*p)
	}
	eventually.Nil(t, wait, func() error {
		r := bq.cli(ctxT(t), cli.Env{}, "--json", "queues", bq.q.Name)
		if r.code != 0 {
			return fmt.Errorf("queues --json: exit %d: %s", r.code, r.err)
		}
		var out struct {
			Limits []limit `json:"limits"`
		}
		if err := json.Unmarshal([]byte(r.out), &out); err != nil {
			t.Fatalf("queues --json: %v\n%s", err, r.out)
		}
		if len(out.Limits) != 1 {
			return fmt.Errorf("queues --json: limits %+v, want the queue's", out.Limits)
		}
		l := out.Limits[0]
		got := fmt.Sprintf("%s limit=%s in_use=%s waiting=%s rate=%v rate_ready=%s rate_waiting=%s keys_held=%s keys_waiting=%s",
			l.Queue, show(l.Limit), show(l.InUse), show(l.Waiting), *l.Rate, show(l.RateReady), show(l.RateWaiting), show(l.KeysHeld), show(l.KeysWaiting))
		want := bq.q.Name + " limit=3 in_use=1 waiting=0 rate=5/s rate_ready=5 rate_waiting=0 keys_held=1 keys_waiting=1"
		if got != want {
			return fmt.Errorf("queues --json: limits %s, want %s", got, want)
		}
		return nil
	}, "the queue's limits in queuey --json queues")

	r := bq.cli(ctxT(t), cli.Env{}, "queues", bq.q.Name)
	row := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(bq.q.Name) + `\s+3\s+1\s+0\s+5/s\s+5\s+0\s+1\s+1\s*$`)
	if r.code != 0 || !strings.Contains(r.out, "global limits") || !strings.Contains(r.out, "KEYS_WAITING") || !row.MatchString(r.out) {
		t.Errorf("queues: exit %d, want 0 and a row of the queue's limits:\n%s%s", r.code, r.out, r.err)
	}

	// Without the management API the limits cannot be read: a note says so.
	r = bq.cli(ctxT(t), cli.Env{}, "--management-url", "http://guest:guest@127.0.0.1:1/", "queues", bq.q.Name)
	if r.code != 0 || !strings.Contains(r.out, "note: global limits could not be read: ") || strings.Contains(r.out, "KEYS_WAITING") {
		t.Errorf("queues without the management API: exit %d, want 0 and a note that the limits could not be read:\n%s%s", r.code, r.out, r.err)
	}

	other := newBrokerQueue(t)
	r = other.cli(ctxT(t), cli.Env{}, "--json", "queues", other.q.Name)
	var out struct {
		Limits []limit `json:"limits"`
	}
	if err := json.Unmarshal([]byte(r.out), &out); err != nil || r.code != 0 || out.Limits == nil || len(out.Limits) != 0 {
		t.Errorf("queues --json of an unlimited queue: exit %d, limits %+v (%v), want []:\n%s", r.code, out.Limits, err, r.out)
	}
	if r = other.cli(ctxT(t), cli.Env{}, "queues", other.q.Name); strings.Contains(r.out, "global limits") {
		t.Errorf("queues of an unlimited queue shows limits:\n%s", r.out)
	}
}
