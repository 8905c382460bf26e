// Package clustertest runs tests on the three-node RabbitMQ cluster of
// scripts/cluster.sh (nodes qa1..qa3@localhost, AMQP on 127.0.0.1:5681-5683),
// beside the main broker and never touching it: it starts the cluster from
// a package's TestMain (Setup), kills and restarts nodes, finds a quorum queue's
// leader, waits until a restarted node has rejoined a queue, and measures
// what a client saw around each kill (Ledger, Gaps).
//
// A test that kills a node restarts it when it ends, so the cluster is left
// running for the next test; `make cluster-down` stops it.
package clustertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Nodes is how many nodes the cluster has; they are numbered 1..Nodes.
const Nodes = 3

// upTimeout bounds starting the whole cluster; nodeTimeout one node.
const (
	upTimeout   = 5 * time.Minute
	nodeTimeout = 2 * time.Minute
)

// URL is the AMQP URL of node n (1..Nodes).
func URL(n int) string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", Port(n)) }

// URLsAfter returns the AMQP URLs of the nodes other than n, the next
// one first: the failover list of a client that dials node n.
func URLsAfter(n int) []string {
	urls := make([]string, 0, Nodes-1)
	for i := 1; i < Nodes; i++ {
		urls = append(urls, URL((n-1+i)%Nodes+1))
	}
	return urls
}

// Port is the AMQP port of node n.
func Port(n int) int { return 5680 + n }

// Node returns the number of the node named name ("qa2@localhost" is 2),
// or 0.
func Node(name string) int {
	for n := 1; n <= Nodes; n++ {
		if name == fmt.Sprintf("qa%d@localhost", n) {
			return n
		}
	}
	return 0
}

var (
	upOnce sync.Once
	upErr  error
	// started says that this process started the cluster: Teardown stops
	// it again.
	started bool
)

// Setup starts the cluster, unless every node already answers; call it
// from TestMain. When the cluster cannot start, the reason is printed and
// Require skips each test with it, or fails it under CI or
// QUEUEY_REQUIRE_BROKER.
func Setup() {
	upOnce.Do(func() { upErr = up() })
	if upErr != nil {
		fmt.Fprintf(os.Stderr, "clustertest: %v\n", upErr)
	}
}

// Require skips tb when the cluster did not start, or fails it under CI
// or QUEUEY_REQUIRE_BROKER.
func Require(tb testing.TB) {
	tb.Helper()
	upOnce.Do(func() { upErr = up() })
	if upErr == nil {
		return
	}
	msg := fmt.Sprintf("the test cluster did not start: %v (make cluster starts it)", upErr)
	if os.Getenv("CI") != "" || os.Getenv("QUEUEY_REQUIRE_BROKER") != "" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

func up() error {
	if allAnswer() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	_, err := script(ctx, "up")
	started = err == nil
	return err
}

// keepEnv, when set, keeps a cluster that the tests started running after
// them, for repeated runs; `make cluster` starts one that stays too.
const keepEnv = "QUEUEY_KEEP_CLUSTER"

// Teardown stops the cluster, and removes its state, when this process
// started it and QUEUEY_KEEP_CLUSTER is not set, so that a test run leaves
// the machine as it found it: a cluster that ran before the tests runs on.
// Call it from TestMain once the tests are done.
func Teardown() {
	if !started || os.Getenv(keepEnv) != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), upTimeout)
	defer cancel()
	if _, err := script(ctx, "down"); err != nil {
		fmt.Fprintf(os.Stderr, "clustertest: stop the cluster this run started: %v\n", err)
	}
}

func allAnswer() bool {
	for n := 1; n <= Nodes; n++ {
		if !Answers(n) {
			return false
		}
	}
	return true
}

// Answers reports whether node n accepts TCP connections on its AMQP port.
func Answers(n int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(n))), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Kill kills node n with SIGKILL (the script checks that the pid is that
// node's beam) and returns when it is dead. Node n is started again when
// tb ends, if it is still down then.
func Kill(tb testing.TB, n int) time.Time {
	tb.Helper()
	tb.Cleanup(func() {
		if !Answers(n) {
			Start(tb, n)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	if _, err := script(ctx, "kill", strconv.Itoa(n)); err != nil {
		tb.Fatalf("kill node %d: %v", n, err)
	}
	return time.Now()
}

// Start starts node n again and returns once its app runs.
func Start(tb testing.TB, n int) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	if _, err := script(ctx, "start", strconv.Itoa(n)); err != nil {
		tb.Fatalf("start node %d: %v", n, err)
	}
}

// Queue is what rabbitmqctl says about a queue.
type Queue struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Leader   string   `json:"leader"`
	Members  NodeList `json:"members"` // a quorum queue's members
	Online   NodeList `json:"online"`  // those of them on running nodes
	Messages int      `json:"messages"`
}

// NodeList is a list of node names; rabbitmqctl gives a classic queue ""
// where a quorum queue has a list.
type NodeList []string

// UnmarshalJSON reads a list of names, or "" as none.
func (l *NodeList) UnmarshalJSON(b []byte) error {
	if string(b) == `""` {
		*l = nil
		return nil
	}
	return json.Unmarshal(b, (*[]string)(l))
}

// Queues lists the queues whose names start with prefix, asking node n
// (any running node sees the whole cluster). A quorum queue's Leader is
// its leader's node name (see Node).
func Queues(tb testing.TB, n int, prefix string) []Queue {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	out, err := script(ctx, "ctl", strconv.Itoa(n), "list_queues", "name", "type", "leader", "members", "online", "messages", "-q", "--formatter", "json")
	if err != nil {
		tb.Fatalf("list queues on node %d: %v", n, err)
	}
	var all []Queue
	if err := json.Unmarshal(out, &all); err != nil {
		tb.Fatalf("list queues on node %d: %v in %q", n, err, out)
	}
	var qs []Queue
	for _, q := range all {
		if strings.HasPrefix(q.Name, prefix) {
			qs = append(qs, q)
		}
	}
	return qs
}

// Leader returns the node that leads quorum queue name, asking node n.
func Leader(tb testing.TB, n int, name string) int {
	tb.Helper()
	for _, q := range Queues(tb, n, name) {
		if q.Name == name {
			if l := Node(q.Leader); l != 0 {
				return l
			}
			tb.Fatalf("queue %q: leader %q is not a node of the cluster", name, q.Leader)
		}
	}
	tb.Fatalf("queue %q not found on node %d", name, n)
	return 0
}

// pollInterval is how often AwaitOnline asks again: rabbitmqctl tells of
// no change, it can only be asked.
const pollInterval = 500 * time.Millisecond

// AwaitOnline returns once every node runs a member of quorum queue name,
// asking node n, so that a node started again has rejoined the queue
// before the next one is killed. It fails tb after nodeTimeout.
func AwaitOnline(tb testing.TB, n int, name string) {
	tb.Helper()
	deadline := time.Now().Add(nodeTimeout)
	for {
		var online NodeList
		for _, q := range Queues(tb, n, name) {
			if q.Name == name {
				online = q.Online
			}
		}
		if len(online) == Nodes {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("queue %q: members online %v after %v, want all %d nodes", name, online, nodeTimeout, Nodes)
		}
		time.Sleep(pollInterval)
	}
}

// script runs scripts/cluster.sh with args and returns its stdout.
func script(ctx context.Context, args ...string) ([]byte, error) {
	path, err := scriptPath()
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // a child left holding the pipes must not hang the test
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", path, strings.Join(args, " "), err, strings.TrimSpace(stdout.String()+"\n"+stderr.String()))
	}
	return stdout.Bytes(), nil
}

// scriptPath finds scripts/cluster.sh in the module root, above the
// working directory of the test.
func scriptPath() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "scripts", "cluster.sh"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: cannot find scripts/cluster.sh")
		}
		dir = parent
	}
}
