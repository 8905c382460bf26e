package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"regexp"
	"testing"

	"go.uber.org/goleak"

	"github.com/queuey/queuey/internal/brokertest"
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
	var out bytes.Buffer
	if err := run(context.Background(), &out, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatalf("run: %v\noutput:\n%s", err, &out)
	}
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
			t.Errorf("output has no line matching %s\noutput:\n%s", want, &out)
		}
	}
	return out.Bytes()
}
