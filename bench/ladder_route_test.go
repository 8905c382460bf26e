package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// routeGranularity is the granularity of BenchmarkLadderRoute's ladders
// (queuey.ladder.<type>.250ms), its own, deleted after each row.
const routeGranularity = 250 * time.Millisecond

// routeMsgs is how many waits each row of BenchmarkLadderRoute publishes:
// enough that the broker's CPU, read in 10ms ticks, is exact to 2µs a
// wait.
const routeMsgs = 5000

// BenchmarkLadderRoute measures what the broker takes to route a wait
// into a delay ladder, through plain amqp091-go on a ladder that queuey
// declared: 5,000 persistent waits of one delay (1,000s), mandatory and
// confirmed, 64 unconfirmed at most on one channel, with each way in:
//
//   - level/<type>: to the topic exchange of the level of the delay's
//     highest set bit, P.LL, with the wait's routing key (N+1 words and
//     more): the way of docs/wire-format.md, which other producers take.
//   - enter/<type>: to the direct exchange P.enter with the same key and
//     the AMQP header BCC naming the level (topology.Ladder.Enter): the
//     way the workers take.
//   - queue/<type>: to the default exchange with the level queue's name as
//     the key: the floor under both, which a wait cannot take (the level
//     would dead-letter it with that key).
//
// Each reports waits per second and the broker's CPU per wait
// (broker-µs/wait). Every wait lands in the same level queue.
func BenchmarkLadderRoute(b *testing.B) {
	for _, qt := range []runtime.QueueType{runtime.QueueClassic, runtime.QueueQuorum} {
		for _, route := range []string{"level", "enter", "queue"} {
			b.Run(route+"/"+string(qt), func(b *testing.B) { benchLadderRoute(b, qt, route) })
		}
	}
}

func benchLadderRoute(b *testing.B, qt runtime.QueueType, route string) {
	requireBroker(b)
	m := waitMode{name: "ladder-" + string(qt), qt: qt, delay: runtime.DelayLadder}
	var total time.Duration
	var brokerCPU, clientCPU float64
	for i := 0; b.Loop(); i++ {
		name := uniqueBenchName("ladder-route", i)
		elapsed, brokerUS, clientUS := ladderRouteOnce(b, name, m, route)
		total += elapsed
		brokerCPU += brokerUS
		clientCPU += clientUS
	}
	b.ReportMetric(float64(b.N*routeMsgs)/total.Seconds(), "waits/s")
	b.ReportMetric(brokerCPU/float64(b.N), "broker-µs/wait")
	b.ReportMetric(clientCPU/float64(b.N), "client-µs/wait")
	b.ReportMetric(0, "ns/op")
}

func ladderRouteOnce(b *testing.B, name string, m waitMode, route string) (elapsed time.Duration, brokerUS, clientUS float64) {
	ctx, cancel := context.WithTimeout(context.Background(), benchWait)
	defer cancel()
	be := dialBroker(b, ctx, rabbitmq.Options{Granularity: routeGranularity})
	defer be.Close()
	defer deleteRowAt(b, name, m, routeGranularity)
	q := modeQueue(name, m)
	if _, err := runtime.NewProducer(ctx, be, q); err != nil { // declares the ladder
		b.Fatal(err)
	}
	prefix := fmt.Sprintf("queuey.ladder.%s.%dms", m.qt, routeGranularity.Milliseconds())
	levels := waits.Levels(routeGranularity)
	units := uint64(1000 * time.Second / routeGranularity)
	var key strings.Builder
	top := 0
	for bit := levels - 1; bit >= 0; bit-- {
		if units>>bit&1 == 1 {
			key.WriteString("1.")
			top = max(top, bit)
		} else {
			key.WriteString("0.")
		}
	}
	key.WriteString(name)
	level := fmt.Sprintf("%s.%02d", prefix, top)
	exchange, rk := level, key.String()
	var headers amqp.Table
	switch route {
	case "enter":
		exchange = prefix + ".enter"
		headers = amqp.Table{"BCC": []any{fmt.Sprintf("%02d", top)}}
	case "queue":
		exchange, rk = "", level
	}
	conn := floorDial(b)
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		b.Fatal(err)
	}
	returns := ch.NotifyReturn(make(chan amqp.Return, routeMsgs))
	body := make([]byte, 64)
	inFlight := make(chan *amqp.DeferredConfirmation, 64)
	var confirmErr error
	var wg sync.WaitGroup
	mark := broker.Start()
	start := time.Now()
	wg.Go(func() {
		for dc := range inFlight {
			ok, err := dc.WaitContext(ctx)
			if confirmErr == nil && (err != nil || !ok) {
				confirmErr = fmt.Errorf("confirm: ok=%v, %v", ok, err)
			}
		}
	})
	for range routeMsgs {
		dc, err := ch.PublishWithDeferredConfirmWithContext(ctx, exchange, rk, true, false,
			amqp.Publishing{DeliveryMode: amqp.Persistent, Body: body, Headers: headers})
		if err != nil {
			close(inFlight)
			wg.Wait()
			b.Fatal(err)
		}
		inFlight <- dc
	}
	close(inFlight)
	wg.Wait()
	elapsed = time.Since(start)
	span := mark.Stop(routeMsgs)
	if confirmErr != nil {
		b.Fatal(confirmErr)
	}
	if n := len(returns); n > 0 {
		b.Fatalf("%d of %d waits returned: the %s route does not reach %q", n, routeMsgs, route, level)
	}
	held, err := ch.QueueDeclarePassive(level, true, false, false, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	if held.Messages != routeMsgs {
		b.Fatalf("%d waits in %q, want %d", held.Messages, level, routeMsgs)
	}
	return elapsed, span.PerJob(span.ServerCPU), span.PerJob(span.ClientCPU)
}
