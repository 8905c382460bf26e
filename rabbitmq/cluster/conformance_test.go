package cluster_test

import (
	"testing"

	"github.com/queuey/queuey/internal/testenv/clustertest"
	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
	"github.com/queuey/queuey/runtime/backendtest"
)

// TestClusterConformance runs the conformance suite on classic queues of
// a cluster node.
func TestClusterConformance(t *testing.T) {
	clustertest.Require(t)
	backendtest.Run(t, backendtest.Features{}, onNode(1))
}

// TestClusterConformanceQuorum runs it on quorum queues, replicated over
// the three nodes, with their quorum hold queues and dead-letter queues.
func TestClusterConformanceQuorum(t *testing.T) {
	clustertest.Require(t)
	f := backendtest.Features{QueueType: runtime.QueueQuorum, Delay: runtime.DelayQueue, CoarsePriority: true, DeferAheadSlack: 1}
	if !clustertest.Dial(t, 2, rabbitmq.Options{}).QuorumPriorities() {
		f.NoPriorityOrder = true
	}
	backendtest.Run(t, f, onNode(2))
}
