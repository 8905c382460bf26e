package plugin

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

func TestExchangeName(t *testing.T) {
	if got := ExchangeName(runtime.QueueConfig{Name: "emails.send"}); got != "emails.send.delay" {
		t.Errorf("default exchange %q, want emails.send.delay", got)
	}
	if got := ExchangeName(runtime.QueueConfig{Name: "emails.send", DelayExchange: "shared.delay"}); got != "shared.delay" {
		t.Errorf("named exchange %q, want shared.delay", got)
	}
	if got := ExchangeArgs()[ArgDelayedType]; got != "direct" {
		t.Errorf("x-delayed-type %v, want direct", got)
	}
}

func TestPublishing(t *testing.T) {
	orig := amqp.Publishing{Headers: amqp.Table{"x-queuey-attempt": int32(2)}, Priority: 7, Body: []byte("x")}
	p, err := Publishing(orig, 1500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if p.Headers[HeaderDelay] != int32(1500) {
		t.Errorf("x-delay %v (%T), want int32 1500", p.Headers[HeaderDelay], p.Headers[HeaderDelay])
	}
	if p.Headers["x-queuey-attempt"] != int32(2) || p.Priority != 7 || string(p.Body) != "x" {
		t.Errorf("publishing lost its fields: %+v", p)
	}
	if _, ok := orig.Headers[HeaderDelay]; ok {
		t.Errorf("the caller's headers were modified")
	}
	if err := p.Headers.Validate(); err != nil {
		t.Errorf("headers not valid AMQP: %v", err)
	}
}

func TestDelayHeaderLimits(t *testing.T) {
	if ms, err := DelayHeader(MaxDelay); err != nil || ms != 1<<31-1 {
		t.Errorf("DelayHeader(MaxDelay) = %d, %v", ms, err)
	}
	if ms, err := DelayHeader(time.Microsecond); err != nil || ms != 1 {
		t.Errorf("DelayHeader(1µs) = %d, %v; want 1 (rounded up, never early)", ms, err)
	}
	for _, d := range []time.Duration{MaxDelay + time.Millisecond, 1000 * 24 * time.Hour} {
		if _, err := DelayHeader(d); !errors.Is(err, runtime.ErrDelayTooLong) {
			t.Errorf("DelayHeader(%v) = %v, want ErrDelayTooLong", d, err)
		}
	}
	if _, err := DelayHeader(-time.Second); err == nil {
		t.Errorf("negative delay accepted")
	}
}

func TestIsPluginMissing(t *testing.T) {
	// The broker's answer, as amqp091-go reports it: 3.10.8's, which
	// closes the connection, and 4.0.5's, which closes the channel.
	missing := &amqp.Error{Code: amqp.CommandInvalid, Reason: "COMMAND_INVALID - unknown exchange type 'x-delayed-message'", Server: true}
	missing4 := &amqp.Error{Code: amqp.PreconditionFailed, Reason: "PRECONDITION_FAILED - unknown exchange type 'x-delayed-message'", Server: true, Recover: true}
	for _, e := range []*amqp.Error{missing, missing4} {
		if !IsPluginMissing(e) {
			t.Errorf("IsPluginMissing(%v) = false", e)
		}
	}
	for _, e := range []error{
		&amqp.Error{Code: amqp.NotFound, Reason: "NOT_FOUND"},
		errors.New("x"),
		// An exchange that exists with another type: a mismatch, not a
		// missing plugin.
		&amqp.Error{Code: amqp.PreconditionFailed, Reason: "PRECONDITION_FAILED - inequivalent arg 'type' for exchange 'q.delay' in vhost '/': received 'x-delayed-message' but current is 'direct'"},
	} {
		if IsPluginMissing(e) {
			t.Errorf("IsPluginMissing(%v) = true", e)
		}
	}
	err := MissingError("emails.send", missing)
	if !errors.Is(err, ErrPluginMissing) || !strings.Contains(err.Error(), EnableCommand) || !strings.Contains(err.Error(), `"emails.send"`) {
		t.Errorf("MissingError = %v", err)
	}
}

func TestNotProvisionedError(t *testing.T) {
	err := NotProvisionedError("emails.send", "shared.delay", &amqp.Error{Code: amqp.NotFound, Reason: "NOT_FOUND - no exchange 'shared.delay' in vhost '/'"})
	if !errors.Is(err, ErrNotProvisioned) {
		t.Errorf("NotProvisionedError does not wrap ErrNotProvisioned: %v", err)
	}
	for _, want := range []string{`"emails.send"`, `"shared.delay"`, ExchangeType, ArgDelayedType + "=direct", "NOT_FOUND"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("NotProvisionedError = %q, want it to name %s", err, want)
		}
	}
	err = MismatchError("emails.send", "emails.send.delay", errors.New("inequivalent arg 'type'"))
	for _, want := range []string{`"emails.send"`, `"emails.send.delay"`, ExchangeType, "inequivalent"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("MismatchError = %q, want it to name %s", err, want)
		}
	}
}

func TestMissingExchange(t *testing.T) {
	err := fmt.Errorf("publish: %w", &amqp.Error{Code: amqp.NotFound, Reason: "NOT_FOUND - no exchange 'q.delay' in vhost '/'"})
	if ex, ok := MissingExchange(err); !ok || ex != "q.delay" {
		t.Errorf("MissingExchange = %q, %v; want q.delay, true", ex, ok)
	}
	for _, err := range []error{
		nil,
		errors.New("no exchange 'x' in vhost"),
		&amqp.Error{Code: amqp.NotFound, Reason: "NOT_FOUND - no queue 'q' in vhost '/'"},
		&amqp.Error{Code: amqp.PreconditionFailed, Reason: "no exchange 'x' in vhost '/'"},
	} {
		if ex, ok := MissingExchange(err); ok {
			t.Errorf("MissingExchange(%v) = %q, true", err, ex)
		}
	}
	gone := GoneError("q", "q.delay", err)
	if !errors.Is(gone, ErrNotProvisioned) || !strings.Contains(gone.Error(), `"q.delay"`) {
		t.Errorf("GoneError = %v", gone)
	}
}
