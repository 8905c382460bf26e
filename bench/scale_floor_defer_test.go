package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/bench/e2e"
	"github.com/queuey/queuey/internal/testenv/brokertest"
)

// benchFloorDefer is the floor under BenchmarkScaleWaits' defer/shared
// rows: plain amqp091-go doing a one-delay deferral's broker work with no
// queuey code. 1,000 persistent messages like queuey's jobs (jobLike) wait
// in a work queue of queue type qt (classic with x-max-priority 10, as
// queuey's classic queues are by default; quorum, which has no priorities
// on 3.x), published outside the clock. Inside it, a consumer with
// prefetch 100 takes them, and each delivery is published, persistent,
// mandatory and confirmed, with its properties, into one waiting queue of
// the same type declared as a ladder level is (a queue-level TTL of
// 1,000s dead-lettering to an exchange; at least once and reject-publish
// where quorum), and acked once its confirm is back, the acks of
// deliveries confirmed together in one frame. Deferrals settled per
// second, and the broker's and this process's CPU per deferral.
//
// With enter, each wait goes the way a ladder wait does
// (docs/delays.md): to a direct exchange with a routing key as long as a
// ladder key at the default granularity (24 one-character words and the
// queue's name) and the waiting queue's binding key as its BCC header,
// which is what a wait costs to carry its delay into a level queue; without,
// straight into the waiting queue by the default exchange, which carries
// no delay.
func benchFloorDefer(b *testing.B, qt string, enter bool) {
	requireBroker(b)
	const msgs = scaleDefers
	var total time.Duration
	var brokerCPU, clientCPU float64
	for i := 0; b.Loop(); i++ {
		name := uniqueBenchName("floor-defer-"+qt, i)
		elapsed, span := floorDeferOnce(b, name, qt, msgs, enter)
		total += elapsed
		brokerCPU += span.PerJob(span.ServerCPU)
		clientCPU += span.PerJob(span.ClientCPU)
	}
	b.ReportMetric(float64(b.N*msgs)/total.Seconds(), "deferrals/s")
	b.ReportMetric(brokerCPU/float64(b.N), "broker-µs/wait")
	b.ReportMetric(clientCPU/float64(b.N), "client-µs/wait")
	b.ReportMetric(0, "ns/op")
}

func floorDeferOnce(b *testing.B, name, qt string, msgs int, enter bool) (time.Duration, e2e.Span) {
	b.Helper()
	work, wait := name, name+".wait"
	defer brokertest.DeleteQueues(amqpURL(), work, wait)
	workArgs := amqp.Table{"x-queue-type": qt}
	waitArgs := amqp.Table{
		"x-queue-type": qt, "x-message-ttl": int32(scaleDefers * 1000), "x-dead-letter-exchange": "amq.topic",
	}
	if qt == "classic" {
		workArgs["x-max-priority"] = int32(10)
	} else {
		waitArgs["x-dead-letter-strategy"] = "at-least-once"
		waitArgs["x-overflow"] = "reject-publish"
	}
	conn := floorDial(b)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	for q, args := range map[string]amqp.Table{work: workArgs, wait: waitArgs} {
		if _, err := ch.QueueDeclare(q, true, false, false, false, args); err != nil {
			b.Fatalf("declare %s: %v", q, err)
		}
	}
	exchange, key := "", wait
	var headers amqp.Table
	if enter {
		exchange = name + ".enter"
		if err := ch.ExchangeDeclare(exchange, amqp.ExchangeDirect, false, true, false, false, nil); err != nil {
			b.Fatal(err)
		}
		if err := ch.QueueBind(wait, "11", exchange, false, nil); err != nil {
			b.Fatal(err)
		}
		key = strings.Repeat("0.", 12) + "1.1.1.1.1.0.1.0.0.0.0.0." + name
		headers = amqp.Table{"BCC": []any{"11"}}
	}
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	var last *amqp.DeferredConfirmation
	for n := range msgs {
		if last, err = ch.PublishWithDeferredConfirmWithContext(ctx, "", work, true, false, jobLike(n)); err != nil {
			b.Fatal(err)
		}
	}
	if ok, err := last.WaitContext(ctx); err != nil || !ok {
		b.Fatalf("fill %s: confirm ok=%v, %v", work, ok, err)
	}

	sub, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := sub.Qos(100, 0, false); err != nil {
		b.Fatal(err)
	}
	type pending struct {
		tag uint64
		dc  *amqp.DeferredConfirmation
	}
	inFlight := make(chan pending, 100)
	acked := make(chan error, 1)
	go func() {
		var err error
		n := 0
		for p := range inFlight {
			ok, werr := p.dc.WaitContext(ctx)
			if err == nil && (werr != nil || !ok) {
				err = fmt.Errorf("wait confirm: ok=%v, %v", ok, werr)
			}
			n++
			// Ack in one frame every delivery confirmed so far.
			if len(inFlight) == 0 || n%16 == 0 {
				if aerr := sub.Ack(p.tag, true); err == nil && aerr != nil {
					err = aerr
				}
			}
		}
		acked <- err
	}()
	mark := broker.Start()
	start := time.Now()
	deliveries, err := sub.ConsumeWithContext(ctx, work, "", false, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	var failed error
	for n := 0; n < msgs && failed == nil; n++ {
		select {
		case d, ok := <-deliveries:
			if !ok {
				failed = errors.New("deliveries closed")
				break
			}
			dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, true, false,
				amqp.Publishing{Headers: headers,
					DeliveryMode: amqp.Persistent, Priority: d.Priority, ContentType: d.ContentType,
					MessageId: d.MessageId, Timestamp: d.Timestamp, Type: d.Type, Body: d.Body,
				})
			if err != nil {
				failed = err
				break
			}
			inFlight <- pending{d.DeliveryTag, dc}
		case <-ctx.Done():
			failed = ctx.Err()
		}
	}
	close(inFlight)
	if err := <-acked; failed == nil {
		failed = err
	}
	elapsed := time.Since(start)
	span := mark.Stop(msgs)
	if failed != nil {
		b.Fatal(failed)
	}
	return elapsed, span
}

// jobLike returns the n-th of the messages benchFloorDefer's work queue
// holds: persistent, of the size of a queuey job of BenchmarkScaleWaits'
// rows (the same properties, a body of the same length), with no queuey
// code.
func jobLike(n int) amqp.Publishing {
	return amqp.Publishing{
		DeliveryMode: amqp.Persistent,
		ContentType:  "application/vnd.queuey.envelope+msgpack",
		MessageId:    fmt.Sprintf("01a23dd7-c86f-768d-8cfc-%012x", n),
		Timestamp:    time.Now(),
		Type:         "bench.scaleJob",
		Body:         make([]byte, 27),
	}
}
