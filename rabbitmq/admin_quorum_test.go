package rabbitmq_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/internal/testenv/eventually"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/codec"
	"github.com/queuey/queuey/runtime"
)

// managementAPI is the broker's management API for tests that change
// broker settings: brokertest.ManagementURL. It skips t when the API does
// not answer.
type managementAPI struct {
	base       *url.URL // without credentials
	user, pass string
}

func management(t *testing.T) managementAPI {
	t.Helper()
	u, err := url.Parse(brokertest.ManagementURL())
	if err != nil {
		t.Fatalf("management URL: %v", err)
	}
	m := managementAPI{base: u}
	if u.User != nil {
		m.user = u.User.Username()
		m.pass, _ = u.User.Password()
	}
	m.base.User = nil
	if _, err := m.do(http.MethodGet, "api/overview", nil); err != nil {
		t.Skipf("this test sets a broker policy through the management API, which does not answer: %v (rabbitmq-plugins enable rabbitmq_management)", err)
	}
	return m
}

// do sends a request to path (relative to the API's base) and returns the
// response body; a status of 300 or more is an error.
func (m managementAPI) do(method, path string, body any) ([]byte, error) {
	var in bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&in).Encode(body); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, m.base.JoinPath(path).String(), &in)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(m.user, m.pass)
	req.Header.Set("Content-Type", "application/json")
	// No idle connection outlives the request, for goleak.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, out.String())
	}
	return out.Bytes(), nil
}

// deliveryLimit applies a policy with delivery-limit limit to queue alone
// (vhost "/"), at a priority above any other policy, and removes it when t
// ends, however t ends. It returns once the queue shows the policy.
func (m managementAPI) deliveryLimit(t *testing.T, queue string, limit int) {
	t.Helper()
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	name := "queuey-test-delivery-limit-" + hex.EncodeToString(buf[:])
	policy := "api/policies/" + url.PathEscape("/") + "/" + url.PathEscape(name)
	t.Cleanup(func() {
		if _, err := m.do(http.MethodDelete, policy, nil); err != nil {
			t.Errorf("remove policy %s: %v", name, err)
		}
	})
	if _, err := m.do(http.MethodPut, policy, map[string]any{
		"pattern":    "^" + regexp.QuoteMeta(queue) + "$",
		"apply-to":   "queues",
		"priority":   1000,
		"definition": map[string]any{"delivery-limit": limit},
	}); err != nil {
		t.Fatalf("set policy: %v", err)
	}
	var q struct {
		Policy     string         `json:"policy"`
		Definition map[string]any `json:"effective_policy_definition"`
	}
	if !eventually.Wait(wait, func() bool {
		body, err := m.do(http.MethodGet, "api/queues/"+url.PathEscape("/")+"/"+url.PathEscape(queue), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &q); err != nil {
			t.Fatal(err)
		}
		return q.Policy == name && q.Definition["delivery-limit"] == float64(limit)
	}) {
		t.Fatalf("queue %q shows policy %q %v after %v, want %s with delivery-limit %d", queue, q.Policy, q.Definition, wait, name, limit)
	}
}

// quorumDeadLetters declares a quorum queue of job through b, kills n jobs
// in order so they are dead letters in its quorum dead-letter queue, and
// returns the queue and their IDs.
func quorumDeadLetters(t *testing.T, b *rabbitmq.Backend, n int) (runtime.QueueConfig, []string) {
	t.Helper()
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind, q.QueueType, q.MaxPriority, q.Prefetch, q.Concurrency = runtime.KindOf[int](), runtime.QueueQuorum, runtime.NoPriority, 1, 1
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range n {
		id, err := runtime.Enqueue(ctxT(t), p, q, i)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	stop := runWorker(t, b, q, func(context.Context, int) error { return runtime.Permanent(errors.New("declined")) })
	ch := rawChannel(t)
	if !eventually.Wait(wait, func() bool { return queueLen(t, ch, q.Name+".dead") >= n }) {
		t.Fatalf("fewer than %d dead letters after %v", n, wait)
	}
	stop()
	return q, ids
}

// takeAll removes every message of queue and returns them, oldest first.
func takeAll(t *testing.T, queue string) []amqp.Delivery {
	t.Helper()
	ch := rawChannel(t)
	n := queueLen(t, ch, queue)
	d, err := ch.Consume(queue, "", true, true, false, false, nil)
	if err != nil {
		t.Fatalf("consume %q: %v", queue, err)
	}
	out := make([]amqp.Delivery, 0, n)
	for len(out) < n {
		out = append(out, within(t, d, fmt.Sprintf("message %d of %d of %q", len(out)+1, n, queue)))
	}
	return out
}

// deliveryCount is a quorum queue's x-delivery-count of m: how many times
// it went back to its queue.
func deliveryCount(m amqp.Delivery) int64 {
	switch v := m.Headers["x-delivery-count"].(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

// TestQuorumDeadLettersSurviveReadsUnderDeliveryLimit: reading the dead
// letters of a quorum queue, listing them and showing each by ID again
// and again, does not count deliveries towards the dead-letter queue's
// delivery limit: under a policy with delivery-limit 2, five full reads
// keep every letter, in order, and leave their x-delivery-count below
// the limit.
func TestQuorumDeadLettersSurviveReadsUnderDeliveryLimit(t *testing.T) {
	m := management(t)
	b := dial(t, rabbitmq.Options{})
	q, ids := quorumDeadLetters(t, b, 3)
	const limit = 2
	m.deliveryLimit(t, q.Name+".dead", limit)
	for read := 1; read <= 5; read++ {
		l, err := b.DeadLetters(ctxT(t), q.Name, admin.DeadLetterPage{})
		if err != nil {
			t.Fatalf("read %d: DeadLetters: %v", read, err)
		}
		if got := l.IDs(); !slices.Equal(got, ids) || l.Total != len(ids) {
			t.Fatalf("read %d: DeadLetters = %v (total %d), want %v", read, got, l.Total, ids)
		}
		for _, id := range ids {
			if d, err := b.DeadLetter(ctxT(t), q.Name, id); err != nil || d.ID != id || d.Reason == "" {
				t.Fatalf("read %d: DeadLetter(%s) = %+v, %v", read, id, d, err)
			}
		}
	}
	dead := takeAll(t, q.Name+".dead")
	var got []string
	for _, d := range dead {
		got = append(got, d.MessageId)
		if n := deliveryCount(d); n >= limit {
			t.Errorf("letter %s: x-delivery-count %d after the reads, want below the limit %d", d.MessageId, n, limit)
		}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("dead-letter queue holds %v after the reads, want %v", got, ids)
	}
}

// fillDead publishes n dead letters of job, each a valid envelope, straight
// into the dead-letter queue of quorum queue q, and returns their IDs in
// order.
func fillDead(t *testing.T, q runtime.QueueConfig, n int) []string {
	t.Helper()
	ch := rawChannel(t)
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	var (
		ids     []string
		confirm []*amqp.DeferredConfirmation
	)
	for i := range n {
		env := &runtime.Envelope{ID: fmt.Sprintf("letter-%05d", i), Queue: q.Name, Kind: q.Kind, Payload: []byte{0x01}, Attempt: 1, MaxAttempts: q.MaxAttempts, EnqueuedAt: time.Now()}
		msg, err := codec.Encode(env, codec.Options{DeadReason: "declined"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := ch.PublishWithDeferredConfirm("", q.Name+".dead", true, false, msg)
		if err != nil {
			t.Fatal(err)
		}
		ids, confirm = append(ids, env.ID), append(confirm, c)
	}
	for _, c := range confirm {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		ok, err := c.WaitContext(ctx)
		cancel()
		if !ok || err != nil {
			t.Fatalf("publish of a dead letter not confirmed: %v", err)
		}
	}
	return ids
}

// TestQuorumDeadLetterReadInterrupted: a read of a quorum dead-letter
// queue stopped midway (a re-drive whose context ends) gives nothing back
// to the queue: every letter not moved is still there once, none counted
// a delivery, and they are in the order they began, rotated: the letters
// the read had got through are at the end.
func TestQuorumDeadLetterReadInterrupted(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q := runtime.DefaultQueueConfig(queueName(t))
	q.Kind, q.QueueType, q.MaxPriority = "job", runtime.QueueQuorum, runtime.NoPriority
	if err := b.Declare(ctxT(t), q); err != nil {
		t.Fatal(err)
	}
	ids := fillDead(t, q, 1500) // more than a read holds at once
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	res, err := b.RedriveDeadLetters(ctx, q.Name, admin.DeadLetterSelector{All: true}, func(p admin.RedriveProgress) {
		if p.Moved == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || len(res.Moved) < 3 || len(res.Moved) >= len(ids) {
		t.Fatalf("re-drive = %d moved, %v; want it stopped by its context after 3", len(res.Moved), err)
	}
	var left []string
	for _, id := range ids {
		if !slices.Contains(res.Moved, id) {
			left = append(left, id)
		}
	}
	var got []string
	for _, d := range takeAll(t, q.Name+".dead") {
		got = append(got, d.MessageId)
		if n := deliveryCount(d); n != 0 {
			t.Errorf("letter %s: x-delivery-count %d, want 0", d.MessageId, n)
		}
	}
	if len(got) != len(left) {
		t.Fatalf("%d letters left, want %d", len(got), len(left))
	}
	i := slices.Index(left, got[0])
	want := left
	if i >= 0 {
		want = append(slices.Clone(left[i:]), left[:i]...)
	}
	for j := range got {
		if got[j] != want[j] {
			t.Fatalf("letters left are not those not moved, in their order rotated: at %d got %v, want %v", j, got[max(0, j-2):min(len(got), j+3)], want[max(0, j-2):min(len(want), j+3)])
		}
	}
}

// TestClassicDeadLettersReadInPlace: a page of a classic dead-letter queue
// reads no further than the page, and what it read goes back in place, not
// copied: the letters after it were never delivered.
func TestClassicDeadLettersReadInPlace(t *testing.T) {
	b := dial(t, rabbitmq.Options{})
	q, _ := jobQueue(t, b)
	ids := fillDead(t, q, 3)
	l, err := b.DeadLetters(ctxT(t), q.Name, admin.DeadLetterPage{Limit: 1})
	if err != nil || !slices.Equal(l.IDs(), ids[:1]) {
		t.Fatalf("DeadLetters = %v, %v; want %v", l.IDs(), err, ids[:1])
	}
	dead := takeAll(t, q.Name+".dead")
	var got []string
	for _, d := range dead {
		got = append(got, d.MessageId)
	}
	if !slices.Equal(got, ids) {
		t.Fatalf("dead-letter queue holds %v, want %v", got, ids)
	}
	// The page read the first two (its letter, and one to tell whether a
	// next page exists); the third was never delivered.
	if !dead[0].Redelivered || !dead[1].Redelivered || dead[2].Redelivered {
		t.Errorf("redelivered flags %v %v %v, want true true false", dead[0].Redelivered, dead[1].Redelivered, dead[2].Redelivered)
	}
}
