package e2e

import (
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
)

// A publish through the tap is counted as its three frames, and its
// content header grows by exactly what a header adds.
func TestTapCountsFrames(t *testing.T) {
	url := brokertest.Require(t)
	tap, err := NewTap(url)
	if err != nil {
		t.Fatal(err)
	}
	defer tap.Close()
	conn, err := amqp.Dial(tap.URL(url))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	header := func(h amqp.Table) int64 {
		tap.Reset()
		// To a queue that does not exist, not mandatory: the broker drops it.
		if err := ch.Publish("", "queuey-tap-test.nowhere", false, false, amqp.Publishing{Headers: h, Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		// A round trip: the publish has passed the tap by its answer.
		if _, err := ch.QueueDeclarePassive("amq.nonexistent.queuey", false, false, false, false, nil); err == nil {
			t.Fatal("passive declare of a missing queue succeeded")
		}
		w := tap.Counts()[ToBroker]
		if w.Frames["basic.publish"] != 1 || w.Frames["content-header"] != 1 || w.Frames["content-body"] != 1 {
			t.Fatalf("frames to the broker: %v", w.Frames)
		}
		var err error
		if ch, err = conn.Channel(); err != nil { // the failed declare closed it
			t.Fatal(err)
		}
		return w.HeaderBytes
	}
	bare := header(nil)
	with := header(amqp.Table{"abc": int64(1)})
	// A table of one int64 field: 4 (table length) + 1+3 (name) + 1 (type) + 8.
	if with-bare != 4+4+1+8 {
		t.Fatalf("content header %d B without headers, %d B with one: want a difference of 17", bare, with)
	}
}
