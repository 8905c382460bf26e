package e2e

import (
	"net/url"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Span is what a Meter measured over the timed part of one run.
type Span struct {
	Jobs    int
	Elapsed time.Duration
	// ClientCPU is this process's user and system CPU: producers,
	// consumers, handlers, the client library and the garbage collector.
	ClientCPU time.Duration
	// ServerCPU is the CPU of the Meter's server processes; zero when none
	// were named or /proc could not be read.
	ServerCPU time.Duration
	// Mallocs is how many heap objects this process allocated, and
	// AllocBytes how many bytes they took.
	Mallocs, AllocBytes uint64
	// GCs is how many garbage collections this process finished, and
	// GCCPU the CPU the collector took: the runtime's estimate of its mark
	// assists, dedicated mark workers and pauses, from wall-clock time; it
	// leaves out mark work on otherwise idle processors.
	GCs   uint32
	GCCPU time.Duration
	// Syscalls is how many read and write system calls this process made
	// (/proc/self/io; zero where it cannot be read): each is a kernel
	// crossing here and, for a socket, a wake-up at the other end.
	Syscalls uint64
	// Goroutines is how many goroutines this process started: each grows
	// a stack of its own and is a hand-off to the scheduler.
	Goroutines uint64
}

// Rate is jobs per second.
func (s Span) Rate() float64 { return float64(s.Jobs) / s.Elapsed.Seconds() }

// PerJob returns d per job in microseconds.
func (s Span) PerJob(d time.Duration) float64 {
	return float64(d.Microseconds()) / float64(s.Jobs)
}

// Meter measures spans. Servers are the TCP ports of the servers whose
// CPU counts: the process listening on each (on this machine) and its
// descendants, such as PostgreSQL's backends. Their CPU includes whatever
// else they serve meanwhile.
type Meter struct {
	Servers []int
}

// BrokerMeter is the Meter of runs on the AMQP broker at amqpURL: its
// server is what listens on that URL's port (5672 when it names none).
func BrokerMeter(amqpURL string) Meter {
	port := 5672
	if u, err := url.Parse(amqpURL); err == nil && u.Port() != "" {
		if p, err := strconv.Atoi(u.Port()); err == nil {
			port = p
		}
	}
	return Meter{Servers: []int{port}}
}

// Mark is the start of a span.
type Mark struct {
	m       Meter
	at      time.Time
	client  time.Duration
	server  map[int]time.Duration // CPU by pid
	heap    heapStats
	calls   uint64
	started uint64
}

// Start starts a span.
func (m Meter) Start() Mark {
	// The servers are read first, so that reading /proc does not count
	// as the client's CPU.
	server := serverCPU(m.Servers)
	return Mark{m: m, heap: readHeap(), calls: syscalls(), started: goroutinesCreated(), client: rusage(), server: server, at: time.Now()}
}

// Stop ends the span begun at k; jobs is how many jobs it carried. A
// server process started during the span counts with all its CPU; one
// that ended during it is not counted.
func (k Mark) Stop(jobs int) Span {
	heap := readHeap()
	s := Span{
		Jobs:       jobs,
		Elapsed:    time.Since(k.at),
		ClientCPU:  rusage() - k.client,
		Mallocs:    heap.Mallocs - k.heap.Mallocs,
		AllocBytes: heap.TotalAlloc - k.heap.TotalAlloc,
		GCs:        heap.NumGC - k.heap.NumGC,
		GCCPU:      heap.GCCPU - k.heap.GCCPU,
		Syscalls:   syscalls() - k.calls,
		Goroutines: goroutinesCreated() - k.started,
	}
	for pid, cpu := range serverCPU(k.m.Servers) {
		s.ServerCPU += cpu - k.server[pid]
	}
	return s
}

// heapStats is what a Span reports of the heap and its collector.
type heapStats struct {
	Mallocs, TotalAlloc uint64
	NumGC               uint32
	GCCPU               time.Duration
}

// heapSamples are read by readHeap, in this order, without stopping the
// world as runtime.ReadMemStats does. Allocations count tiny ones one by
// one, as MemStats.Mallocs does. The collector's CPU leaves out mark work
// done on otherwise idle processors.
var heapSamples = []string{
	"/gc/heap/allocs:objects",
	"/gc/heap/tiny/allocs:objects",
	"/gc/heap/allocs:bytes",
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/mark/assist:cpu-seconds",
	"/cpu/classes/gc/mark/dedicated:cpu-seconds",
	"/cpu/classes/gc/pause:cpu-seconds",
}

func readHeap() heapStats {
	s := make([]metrics.Sample, len(heapSamples))
	for i, name := range heapSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return s[i].Value.Uint64()
	}
	var gc float64
	for _, x := range s[4:] {
		if x.Value.Kind() == metrics.KindFloat64 {
			gc += x.Value.Float64()
		}
	}
	return heapStats{
		Mallocs:    u(0) + u(1),
		TotalAlloc: u(2),
		NumGC:      uint32(u(3)),
		GCCPU:      time.Duration(gc * float64(time.Second)),
	}
}

// goroutinesCreated is how many goroutines this process has started.
func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// syscalls is this process's read and write system calls so far.
func syscalls() uint64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	var n uint64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && (k == "syscr" || k == "syscw") {
			c, _ := strconv.ParseUint(v, 10, 64)
			n += c
		}
	}
	return n
}

func rusage() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
