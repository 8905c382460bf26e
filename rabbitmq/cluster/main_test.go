// Tests of the RabbitMQ backend on the three-node cluster of
// scripts/cluster.sh, which TestMain starts unless it runs: the
// conformance suite, clients failing over while the nodes they use are
// killed, waits in quorum hold queues while nodes die, and global limits'
// tokens while the nodes that lead their queues die.
// They talk to the cluster's nodes only, never to the main broker.
package cluster_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/queuey/queuey/internal/testenv/clustertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

func TestMain(m *testing.M) {
	clustertest.Setup()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		clustertest.Teardown()
		os.Exit(code)
	}))
}

// wait bounds every wait of these tests on an event.
const wait = 60 * time.Second

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// queueName returns a name unique to this run.
func queueName(t *testing.T) string {
	var buf [4]byte
	_, _ = rand.Read(buf[:])
	return "queuey-cluster-test." + strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + "." + hex.EncodeToString(buf[:])
}

// deleteAll deletes, when t ends, queue name and every queue the backend
// may declare beside it: its dead-letter queue and all its quorum hold
// queues, which never expire (classic ones do).
func deleteAll(t *testing.T, name string) {
	t.Cleanup(func() {
		names := append([]string{name, name + topology.DefaultDeadSuffix}, topology.Names{}.QuorumHolds(name, runtime.DefaultGranularity)...)
		clustertest.DeleteQueues(t, names...)
	})
}

// cleaningBackend deletes what was declared through it when its test
// ends.
type cleaningBackend struct {
	*rabbitmq.Backend
	t *testing.T
}

func (c cleaningBackend) Declare(ctx context.Context, q runtime.QueueConfig) error {
	deleteAll(c.t, q.Name)
	return c.Backend.Declare(ctx, q)
}

// onNode returns a constructor of cleaning backends connected to node n.
func onNode(n int) func(t *testing.T) runtime.Backend {
	return func(t *testing.T) runtime.Backend {
		return cleaningBackend{Backend: clustertest.Dial(t, n, rabbitmq.Options{}), t: t}
	}
}
