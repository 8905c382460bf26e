package dashboard

import (
	"context"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/runtime"
)

// TestWaitingKnowsHoldQueuesRabbitMQ: the dashboard counts as a queue's
// waiting the jobs of its hold queues, known by their arguments, and not
// those of another program's work queue named like one of them.
func TestWaitingKnowsHoldQueuesRabbitMQ(t *testing.T) {
	url := brokertest.Require(t)
	cfg := rabbitQueue(t, url)
	b := dialRabbit(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := runtime.NewProducer(ctx, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.Enqueue(ctx, p, cfg, job{To: "a@example.com"}, runtime.WithDelay(time.Hour)); err != nil {
		t.Fatal(err)
	}
	lookalike := cfg.Name + ".retry.1000"
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteRabbitQueues(t, url, lookalike, cfg.Name+".deferred.3600000") })
	if _, err := ch.QueueDeclare(lookalike, true, false, false, false, amqp.Table{
		"x-queue-type": "classic", "x-dead-letter-exchange": "", "x-dead-letter-routing-key": lookalike + ".dead",
	}); err != nil {
		t.Fatal(err)
	}
	if err := ch.Confirm(false); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		c, err := ch.PublishWithDeferredConfirmWithContext(ctx, "", lookalike, true, false, amqp.Publishing{Body: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := c.WaitContext(ctx); !ok || err != nil {
			t.Fatalf("publish to %s: confirmed %v, %v", lookalike, ok, err)
		}
	}
	if q, err := ch.QueueDeclarePassive(lookalike, true, false, false, false, nil); err != nil || q.Messages != 5 {
		t.Fatalf("look-alike: %+v, %v; want 5 jobs", q, err)
	}
	rec := serve(t, b, Options{Configs: []runtime.QueueConfig{cfg}, OnlyConfigured: true}, "/api/stats")
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `"queue":"`+cfg.Name+`"`) || !strings.Contains(body, `"waiting":1,`) {
		t.Errorf("GET /api/stats = %d; want %s with 1 waiting, not the look-alike's 5 too\n%s", rec.Code, cfg.Name, body)
	}
}

// deleteRabbitQueues deletes the named queues, whatever they hold.
func deleteRabbitQueues(t *testing.T, url string, names ...string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Errorf("delete test queues: %v", err)
		return
	}
	defer conn.Close()
	for _, n := range names {
		if ch, err := conn.Channel(); err == nil {
			_, _ = ch.QueueDelete(n, false, false, false)
			ch.Close()
		}
	}
}
