package codec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

// TestHeaderSizeByHand: the content header of a few messages, counted by
// hand from the AMQP 0-9-1 grammar. (That HeaderSize matches what
// amqp091-go writes, for every property and field type, is checked on the
// wire in the rabbitmq package.)
func TestHeaderSizeByHand(t *testing.T) {
	for _, tc := range []struct {
		name string
		msg  amqp.Publishing
		want int
	}{
		{"nothing set", amqp.Publishing{}, 14},
		{"empty headers are not sent", amqp.Publishing{Headers: amqp.Table{}}, 14},
		{"message id", amqp.Publishing{MessageId: "abc"}, 14 + 1 + 3},
		{"mode, priority, timestamp", amqp.Publishing{DeliveryMode: 2, Priority: 1, Timestamp: time.Unix(1, 0)}, 14 + 1 + 1 + 8},
		{"a string header", amqp.Publishing{Headers: amqp.Table{"k": "vv"}}, 14 + 4 + (1 + 1) + (1 + 4 + 2)},
		{"an int64 header", amqp.Publishing{Headers: amqp.Table{"kk": int64(1)}}, 14 + 4 + (1 + 2) + (1 + 8)},
		{"a nested table", amqp.Publishing{Headers: amqp.Table{"t": amqp.Table{"b": true}}}, 14 + 4 + (1 + 1) + (1 + 4 + (1 + 1) + 2)},
		{"an array", amqp.Publishing{Headers: amqp.Table{"a": []any{int32(1), nil}}}, 14 + 4 + (1 + 1) + (1 + 4 + 5 + 1)},
	} {
		if got := HeaderSize(&tc.msg); got != tc.want {
			t.Errorf("%s: HeaderSize = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestCheckPublishingLimits: a content header is refused one byte over what
// a frame carries, with room kept for Reserve, and a body one byte over the
// max message size; both with ErrTooLarge and an error that names the
// message, the size and the limit. Exactly at the limits, both pass.
func TestCheckPublishingLimits(t *testing.T) {
	const frameMax = 4096
	msg := amqp.Publishing{MessageId: "job-1", Headers: amqp.Table{"big": ""}}
	fill := frameMax - FrameOverhead - 30 - HeaderSize(&msg)
	lim := Limits{FrameMax: frameMax, MaxBody: 100, Reserve: 30}

	msg.Headers["big"] = strings.Repeat("x", fill)
	if err := CheckPublishing("", "q", &msg, lim); err != nil {
		t.Fatalf("content header of exactly the room: %v", err)
	}
	msg.Headers["big"] = strings.Repeat("x", fill+1)
	err := CheckPublishing("", "q", &msg, lim)
	if !errors.Is(err, runtime.ErrTooLarge) {
		t.Fatalf("content header one byte over = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{`"job-1"`, fmt.Sprint(frameMax - FrameOverhead - 30 + 1), fmt.Sprint(frameMax - FrameOverhead - 30), "frame_max 4096", `"big"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if err := CheckPublishing("", "q", &msg, Limits{}); err != nil {
		t.Errorf("without a frame limit (frame_max 0): %v", err)
	}

	body := amqp.Publishing{MessageId: "job-2", Body: make([]byte, 100)}
	if err := CheckPublishing("", "q", &body, lim); err != nil {
		t.Fatalf("body of exactly the max message size: %v", err)
	}
	body.Body = make([]byte, 101)
	err = CheckPublishing("", "q", &body, lim)
	if !errors.Is(err, runtime.ErrTooLarge) {
		t.Fatalf("body one byte over = %v, want ErrTooLarge", err)
	}
	for _, want := range []string{`"job-2"`, "101 bytes", "max message size of 100", "MaxMessageSize"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestFitShortensDeadHeaders: a dead letter whose reason and last error
// headers would not fit goes without the last error header (the body keeps
// it whole), then with the reason shortened, saying so.
func TestFitShortensDeadHeaders(t *testing.T) {
	lim := Limits{FrameMax: 4096, Reserve: 64}
	env := sample()
	env.LastError = strings.Repeat("e", 3000)
	msg, err := Encode(env, Options{DeadReason: env.LastError, Fit: lim})
	if err != nil {
		t.Fatal(err)
	}
	if !lim.FitsHeader(&msg) {
		t.Fatalf("content header %d bytes, want at most %d", HeaderSize(&msg), lim.HeaderRoom())
	}
	if _, ok := msg.Headers[HeaderLastError]; ok {
		t.Error("last error header kept; it should go first")
	}
	if DeadReason(msg.Headers) != env.LastError {
		t.Errorf("reason shortened to %d bytes although it fits without the last error header", len(DeadReason(msg.Headers)))
	}
	got, err := Decode(deliver(msg))
	if err != nil || got.LastError != env.LastError {
		t.Fatalf("body's last error: %d bytes, %v; want it whole", len(got.LastError), err)
	}

	long := strings.Repeat("r", 10000)
	msg, err = Encode(env, Options{DeadReason: long, Fit: lim})
	if err != nil {
		t.Fatal(err)
	}
	r := DeadReason(msg.Headers)
	if !lim.FitsHeader(&msg) || !strings.HasPrefix(r, "rrr") || !strings.Contains(r, "cut from 10000 bytes") {
		t.Errorf("content header %d bytes (room %d), reason %q…; want it within, cut and saying so", HeaderSize(&msg), lim.HeaderRoom(), r[:min(len(r), 40)])
	}

	// Without Fit nothing is cut.
	if msg, _ = Encode(env, Options{DeadReason: long}); DeadReason(msg.Headers) != long || msg.Headers[HeaderLastError] != env.LastError {
		t.Error("Encode without Fit changed the dead headers")
	}
}

func TestShorten(t *testing.T) {
	if got := Shorten("short", 10); got != "short" {
		t.Errorf("Shorten of what fits = %q", got)
	}
	s := strings.Repeat("é", 100) // 2 bytes a rune
	got := Shorten(s, 61)
	if len(got) > 61 || !utf8.ValidString(got) || !strings.HasPrefix(got, "é") || !strings.Contains(got, "200 bytes") {
		t.Errorf("Shorten(200 bytes of é, 61) = %q (%d bytes), want valid UTF-8 within 61 saying 200 bytes", got, len(got))
	}
}
