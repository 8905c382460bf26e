package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/queuey/queuey/internal/testenv/brokertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun runs the example on the in-memory backend and checks that it
// shows every outcome it promises.
func TestRun(t *testing.T) {
	t.Setenv(amqpURLEnv, "")
	checkRun(t, `(?m)^backend: +in memory `)
}

// TestRunRabbitMQ runs the example on the local RabbitMQ, as
// QUEUEY_AMQP_URL=... make run does. It skips without a broker, unless CI or
// QUEUEY_REQUIRE_BROKER is set.
func TestRunRabbitMQ(t *testing.T) {
	url := brokertest.Require(t)
	t.Setenv(amqpURLEnv, url)
	t.Setenv(delayEnv, "")
	out := checkRun(t, `(?m)^backend: +RabbitMQ `)
	if want := regexp.MustCompile(`(?m)^inspect: +.* go run ./cmd/queuey dead ls emails.send_email$`); !want.Match(out) {
		t.Errorf("output has no line matching %s\noutput:\n%s", want, out)
	}
}

func checkRun(t *testing.T, backendLine string) []byte {
	t.Helper()
	out := runOutput(t, observability{})
	checkOutcomes(t, out, backendLine)
	return out.Bytes()
}

// runOutput runs the example with obs and returns what it printed.
func runOutput(t *testing.T, obs observability) *bytes.Buffer {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), &out, slog.New(slog.NewTextHandler(io.Discard, nil)), obs); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, &out)
	}
	return &out
}

// checkOutcomes checks that out shows every outcome the example promises.
func checkOutcomes(t *testing.T, out *bytes.Buffer, backendLine string) {
	t.Helper()
	for _, want := range []string{
		backendLine,
		`(?m)^success: +sent "Welcome" to ada@example.com on attempt 1 of 3$`,
		`(?m)^retry: +SendEmail to flaky@example.com failed on attempt 1 of 3 .*; retried in 1s$`,
		`(?m)^success: +sent "Receipt" to flaky@example.com on attempt 2 of 3$`,
		`(?m)^defer: +ChargeCard for cus_42: gateway answered 429 Retry-After 1s; deferred, still attempt 1 of 5$`,
		`(?m)^success: +charged 1999 USD cents to cus_42 on attempt 1 of 5$`,
		`(?m)^dead: +emails.send_email: job \S+ after attempt 1 of 3: permanent: send to nobody@bounce.example: 550 mailbox does not exist$`,
		`(?m)^done: +all outcomes seen`,
	} {
		if !regexp.MustCompile(want).Match(out.Bytes()) {
			t.Errorf("output has no line matching %s\noutput:\n%s", want, out)
		}
	}
}

// TestRunTraced runs the example on the in-memory backend with
// QUEUEY_TRACE=stdout's set-up and checks that, besides every outcome, it
// prints a producer and a consumer span of each queue, one trace per job.
func TestRunTraced(t *testing.T) {
	t.Setenv(amqpURLEnv, "")
	out := runOutput(t, observability{trace: true})
	checkOutcomes(t, out, `(?m)^backend: +in memory `)
	type spanContext struct{ TraceID, SpanID string }
	type span struct {
		Name        string
		SpanContext spanContext
		Parent      spanContext
	}
	names := map[string]int{}
	sent := map[spanContext]bool{}
	var processed []span
	for line := range strings.Lines(out.String()) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var s span
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("span line %q: %v", line, err)
		}
		names[s.Name]++
		if strings.HasPrefix(s.Name, "send ") {
			sent[s.SpanContext] = true
		} else {
			processed = append(processed, s)
		}
	}
	for _, s := range processed {
		if !sent[s.Parent] {
			t.Errorf("span %q %v has parent %v, not one of the producer spans", s.Name, s.SpanContext, s.Parent)
		}
	}
	// 4 jobs enqueued; SendEmail runs 4 times (one retry), ChargeCard twice
	// (one deferral); each run's span is the child of its job's producer
	// span.
	want := map[string]int{
		"send emails.send_email":      3,
		"process emails.send_email":   4,
		"send billing.charge_card":    1,
		"process billing.charge_card": 2,
	}
	if !maps.Equal(names, want) {
		t.Errorf("spans printed %v, want %v\noutput:\n%s", names, want, out)
	}
}
