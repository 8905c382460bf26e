package cli_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/cmd/queuey/cli"
	"github.com/queuey/queuey/internal/testenv/brokertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// migrateQueue is the queue testdata/migrate annotates with max_priority=8.
const migrateQueue = "queuey-cli-test.migrate"

// declareOld declares migrateQueue with max_priority=3 and n jobs, and
// deletes it and what a migration leaves when t ends.
func declareOld(t *testing.T, n int) *rabbitmq.Backend {
	t.Helper()
	url := brokertest.Require(t)
	cleanup := func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			return
		}
		defer conn.Close()
		for _, q := range []string{migrateQueue, migrateQueue + ".dead", migrateQueue + ".migrating", "queuey.paused." + migrateQueue} {
			if ch, err := conn.Channel(); err == nil {
				_, _ = ch.QueueDelete(q, false, false, false)
				ch.Close()
			}
		}
	}
	cleanup()
	t.Cleanup(cleanup)
	b, err := rabbitmq.Dial(ctxT(t), url, rabbitmq.Options{Logger: quiet(), ManagementURL: brokertest.ManagementURL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	q := runtime.DefaultQueueConfig(migrateQueue)
	q.Kind, q.MaxPriority = runtime.KindOf[job](), 3
	p, err := runtime.NewProducer(ctxT(t), b, q)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := runtime.Enqueue(ctxT(t), p, q, job{N: i}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// TestBrokerMigrate: the queues list names the difference from the
// annotation, a dry run prints it and the plan and changes nothing, the
// migration moves every job, and a second one has nothing to migrate.
func TestBrokerMigrate(t *testing.T) {
	declareOld(t, 20)
	env := cli.Env{}
	pkg := []string{"--pkg", "./testdata/migrate"}

	r := runCLI(t, ctxT(t), env, append([]string{"queues"}, pkg...)...)
	if want := "x-max-priority: broker 3, annotation 8"; r.code != 0 || !strings.Contains(r.out, want) || !strings.Contains(r.out, "queuey queues migrate "+migrateQueue) {
		t.Errorf("queues --pkg: exit %d, stdout:\n%s\nstderr: %s\nwant the difference %q and the command", r.code, r.out, r.err, want)
	}
	r = runCLI(t, ctxT(t), env, append([]string{"--json", "queues"}, pkg...)...)
	var listed struct {
		Queues []struct {
			Drift []map[string]string
		}
	}
	if err := json.Unmarshal([]byte(r.out), &listed); err != nil || len(listed.Queues) != 1 {
		t.Fatalf("--json queues --pkg: %v: %s", err, r.out)
	}
	want := []map[string]string{{"queue": migrateQueue, "arg": "x-max-priority", "broker": "3", "annotation": "8"}}
	if !reflect.DeepEqual(listed.Queues[0].Drift, want) {
		t.Errorf("--json queues --pkg: drift %v, want %v", listed.Queues[0].Drift, want)
	}

	r = runCLI(t, ctxT(t), env, append([]string{"queues", "migrate", migrateQueue, "--dry-run"}, pkg...)...)
	if r.code != 0 || !strings.Contains(r.out, "x-max-priority: broker 3, annotation 8") || !strings.Contains(r.out, "plan (nothing changed)") {
		t.Errorf("migrate --dry-run: exit %d, stdout:\n%s\nstderr: %s", r.code, r.out, r.err)
	}
	ch := rawChannel(t, brokertest.URL())
	if n := queueDepth(t, ch, migrateQueue); n != 20 {
		t.Errorf("after the dry run: %d jobs, want the 20 untouched", n)
	}

	r = runCLI(t, ctxT(t), env, append([]string{"queues", "migrate", migrateQueue}, pkg...)...)
	if r.code != 0 || !strings.Contains(r.out, "migrated "+migrateQueue+": 20 jobs moved back") {
		t.Fatalf("migrate: exit %d, stdout:\n%s\nstderr: %s", r.code, r.out, r.err)
	}
	if n := queueDepth(t, rawChannel(t, brokertest.URL()), migrateQueue); n != 20 {
		t.Errorf("after the migration: %d jobs, want 20", n)
	}
	r = runCLI(t, ctxT(t), env, append([]string{"queues"}, pkg...)...)
	if strings.Contains(r.out, "differs from its annotation") {
		t.Errorf("queues --pkg after the migration still shows a difference:\n%s", r.out)
	}

	r = runCLI(t, ctxT(t), env, append([]string{"queues", "migrate", migrateQueue}, pkg...)...)
	if r.code != cli.ExitFailure || !strings.Contains(r.err, "nothing to migrate") {
		t.Errorf("second migrate: exit %d, stderr %q; want 1, nothing to migrate", r.code, r.err)
	}
}

// TestBrokerMigrateRefuses: a queue not on the broker, one not annotated,
// and one whose consumer does not follow the pause are refused, and the
// last is left as it was, resumed.
func TestBrokerMigrateRefuses(t *testing.T) {
	b := declareOld(t, 5)
	env := cli.Env{}
	pkg := []string{"--pkg", "./testdata/migrate"}

	r := runCLI(t, ctxT(t), env, append([]string{"queues", "migrate", "no-such-annotated-queue"}, pkg...)...)
	if r.code != cli.ExitFailure || !strings.Contains(r.err, "names queue \"no-such-annotated-queue\"") {
		t.Errorf("migrate of an unannotated queue: exit %d, stderr %q", r.code, r.err)
	}

	// A consumer that does not follow pauses.
	ch := rawChannel(t, brokertest.URL())
	if _, err := ch.Consume(migrateQueue, "", false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, ctxT(t), env, append([]string{"queues", "migrate", migrateQueue, "--pause-timeout", "300ms"}, pkg...)...)
	if r.code != cli.ExitFailure || !strings.Contains(r.err, "still has 1 consumers") || !strings.Contains(r.err, "Nothing was changed") {
		t.Errorf("migrate with a consumer attached: exit %d, stderr %q", r.code, r.err)
	}
	if paused, err := b.Paused(ctxT(t), migrateQueue); err != nil || paused {
		t.Errorf("after the refusal: paused %v (%v), want resumed", paused, err)
	}
	_ = ch.Close()

	if _, err := rawChannel(t, brokertest.URL()).QueueDelete(migrateQueue, false, false, false); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, ctxT(t), env, append([]string{"queues", "migrate", migrateQueue}, pkg...)...)
	if r.code != cli.ExitFailure || !strings.Contains(r.err, "is not on the broker") {
		t.Errorf("migrate of a queue not on the broker: exit %d, stderr %q", r.code, r.err)
	}
}
