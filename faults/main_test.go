package faults

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queuey/queuey/internal/testenv/brokertest"
)

func TestMain(m *testing.M) {
	if cfg := os.Getenv(workerEnv); cfg != "" {
		os.Exit(workerMain(cfg)) // a worker process started by a test
	}
	goleak.VerifyTestMain(m)
}

// wait bounds every wait of the suite on an event.
const wait = 60 * time.Second

// gate skips t unless the suite was asked for (QUEUEY_FAULTS=1, as make
// test-faults sets it), and returns the broker's URL. It never runs beside
// other packages' tests by accident: it stops the shared broker.
func gate(t *testing.T) string {
	t.Helper()
	if os.Getenv("QUEUEY_FAULTS") == "" {
		t.Skip("the fault suite disrupts the shared broker: run it alone with make test-faults (QUEUEY_FAULTS=1)")
	}
	return brokertest.Require(t)
}

// rabbitmqctl runs rabbitmqctl with args and fails t when it fails.
func rabbitmqctl(t testing.TB, args ...string) {
	t.Helper()
	if out, err := ctl(args...); err != nil {
		t.Fatalf("rabbitmqctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// ctl runs rabbitmqctl with args against the node of the broker under
// test (brokertest.Node), never whichever node is rabbitmqctl's default.
func ctl(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return brokertest.Ctl(ctx, args...).CombinedOutput()
}

// restoreBroker makes sure, when t ends however it ends, that the broker's
// app runs and no memory alarm is left on.
func restoreBroker(t *testing.T) {
	t.Cleanup(func() {
		if out, err := ctl("start_app"); err != nil {
			t.Errorf("restore: rabbitmqctl start_app: %v\n%s", err, out)
		}
		if out, err := ctl("set_vm_memory_high_watermark", "0.4"); err != nil {
			t.Errorf("restore: rabbitmqctl set_vm_memory_high_watermark 0.4: %v\n%s", err, out)
		}
	})
}
