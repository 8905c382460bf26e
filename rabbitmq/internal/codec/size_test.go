package codec

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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
