// Command peers runs one job workload through queuey and through its
// peers, in one sitting, and prints a table and writes an SVG bar chart:
// the same number of jobs of the same 200-byte payload, a handler that
// does nothing, 50 jobs handled at once, the consumer running before the
// clock starts and the clock stopping when the last job is handled.
//
// Each round runs every peer once, in an order that rotates from round to
// round; the table shows the median, the fastest and the slowest round,
// and the CPU per job of this process (client: producers and consumers,
// getrusage) and of the server (the process listening on the server's
// port and its children, from /proc/<pid>/stat), medians too. The servers
// run on this machine: RabbitMQ on 5672, Redis on 6379, PostgreSQL on 5432.
//
//	go run . -jobs 20000 -rounds 3 -svg peers.svg
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/queuey/queuey/bench/e2e"
)

// Settings shared by every peer.
const (
	prefetch  = 50   // jobs handled at once
	producers = 64   // goroutines enqueueing one job at a time
	batch     = 1000 // jobs per batch enqueue
	runWait   = 5 * time.Minute
)

// peer is one row of the table.
type peer struct {
	name     string // who
	settings string // how
	run      func(ctx context.Context, jobs, round int) (e2e.Span, error)
}

// notes say what each peer's settings are for; printed under the table.
const notes = `
river: its database URL sets plan_cache_mode=force_custom_plan. Without it, once the
  job table has been emptied, PostgreSQL caches a generic plan for river's fetch query
  that scans the whole table (autovacuum is off on this server) and river falls to
  100-200 jobs/s: a property of the planner here, not of river. "tuned" is riverbench's
  FetchCooldown 2ms, FetchPollInterval 20ms and 2,000 workers.
queuey and amqp091-go "tuned": a prefetch of 1,000 instead of 50 (and, for queuey,
  1,000 jobs handled at once), as river's tuning runs 2,000 workers.
asynq: TaskCheckInterval 20ms instead of 1s, so no run pays for the idle sleep
  its server starts before the clock.
watermill-amqp: Publish waits for each confirm (ConfirmDelivery), on a pool of 64
  channels; mandatory is off, as watermill does not listen for returns.
CPU: client is this process (getrusage); server is the process on the server's port
  and its children (/proc), which includes whatever else that server did meanwhile.
`

func main() {
	jobs := flag.Int("jobs", 20000, "jobs per run")
	rounds := flag.Int("rounds", 3, "rounds; each runs every peer once")
	only := flag.String("only", "", "comma-separated names of the peers to run (default: all)")
	svg := flag.String("svg", "", "write the bar chart to this file")
	flag.Parse()
	if err := run(*jobs, *rounds, *only, *svg); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(jobs, rounds int, only, svgPath string) error {
	ctx := context.Background()
	all := slices.Concat(amqpPeers(), riverPeers(), asynqPeers(), watermillPeers())
	if only != "" {
		names := strings.Split(only, ",")
		all = slices.DeleteFunc(all, func(p peer) bool { return !slices.Contains(names, p.name) })
		if len(all) == 0 {
			return fmt.Errorf("-only %q names no peer", only)
		}
	}
	start := time.Now().UTC()
	fmt.Printf("%d jobs of a %d-byte payload per run, %d handled at once, %d rounds, %s\n",
		jobs, e2e.PayloadSize, prefetch, rounds, start.Format("2006-01-02 15:04 MST"))
	fmt.Println(versions(ctx))
	spans := make([][]e2e.Span, len(all))
	for r := range rounds {
		for k := range all {
			i := (k + r) % len(all) // each round starts with the next peer
			p := all[i]
			rctx, cancel := context.WithTimeout(ctx, runWait)
			s, err := p.run(rctx, jobs, r)
			cancel()
			if err != nil {
				return fmt.Errorf("%s (%s), round %d: %w", p.name, p.settings, r+1, err)
			}
			fmt.Fprintf(os.Stderr, "round %d: %-22s %-48s %8.0f jobs/s\n", r+1, p.name, p.settings, s.Rate())
			spans[i] = append(spans[i], s)
		}
	}
	rows := summarize(all, spans)
	fmt.Println()
	printTable(os.Stdout, rows)
	fmt.Print(notes)
	if svgPath != "" {
		title := fmt.Sprintf("%d jobs of %d bytes, %d at once; median of %d rounds (bars), min–max (lines); %s, 2 shared cores",
			jobs, e2e.PayloadSize, prefetch, rounds, start.Format("2006-01-02"))
		if err := os.WriteFile(svgPath, chart(title, rows), 0o644); err != nil {
			return err
		}
		fmt.Println("chart:", svgPath)
	}
	return nil
}
