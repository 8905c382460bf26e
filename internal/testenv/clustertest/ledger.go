package clustertest

import (
	"context"
	"fmt"
	"sort"
	"sync"
)

// Ledger accounts for jobs across failures: which were confirmed by the
// broker, which reached a handler (and how often) and which were
// dead-lettered, so a test can say how many were lost and how many came
// twice. It is safe for concurrent use.
type Ledger struct {
	mu        sync.Mutex
	confirmed map[string]bool
	handled   map[string]int
	dead      map[string]bool
	progress  chan struct{}
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{
		confirmed: map[string]bool{},
		handled:   map[string]int{},
		dead:      map[string]bool{},
		progress:  make(chan struct{}, 1),
	}
}

// Confirmed records that the broker confirmed the enqueue of job id.
func (l *Ledger) Confirmed(id string) { l.update(func() { l.confirmed[id] = true }) }

// Handled records a run of job id that settled it, and reports whether it
// was the first.
func (l *Ledger) Handled(id string) (first bool) {
	l.update(func() {
		l.handled[id]++
		first = l.handled[id] == 1
	})
	return first
}

// Dead records that job id was found dead-lettered.
func (l *Ledger) Dead(id string) { l.update(func() { l.dead[id] = true }) }

func (l *Ledger) update(f func()) {
	l.mu.Lock()
	f()
	l.mu.Unlock()
	select {
	case l.progress <- struct{}{}:
	default:
	}
}

// Tally is what a ledger holds at one moment.
type Tally struct {
	Confirmed   int      // enqueues the broker confirmed
	Handled     int      // distinct jobs handled at least once
	Dead        int      // distinct jobs dead-lettered
	Duplicates  int      // runs beyond the first of each job
	Lost        []string // confirmed jobs neither handled nor dead, sorted
	Unconfirmed int      // jobs handled or dead whose enqueue was never confirmed (the confirm was lost with a connection)
}

func (t Tally) String() string {
	return fmt.Sprintf("confirmed %d, handled %d, dead %d, duplicates %d, lost %d, handled without a confirm %d",
		t.Confirmed, t.Handled, t.Dead, t.Duplicates, len(t.Lost), t.Unconfirmed)
}

// Tally counts what the ledger holds now.
func (l *Ledger) Tally() Tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := Tally{Confirmed: len(l.confirmed), Handled: len(l.handled), Dead: len(l.dead)}
	for id, n := range l.handled {
		t.Duplicates += n - 1
		if !l.confirmed[id] {
			t.Unconfirmed++
		}
	}
	for id := range l.dead {
		if !l.confirmed[id] && l.handled[id] == 0 {
			t.Unconfirmed++
		}
	}
	for id := range l.confirmed {
		if l.handled[id] == 0 && !l.dead[id] {
			t.Lost = append(t.Lost, id)
		}
	}
	sort.Strings(t.Lost)
	return t
}

// WaitSettled waits until every confirmed job is handled or dead, and
// returns the tally then, or the tally and ctx's error when ctx ends first.
// One goroutine at a time may wait.
func (l *Ledger) WaitSettled(ctx context.Context) (Tally, error) {
	for {
		t := l.Tally()
		if len(t.Lost) == 0 {
			return t, nil
		}
		select {
		case <-l.progress:
		case <-ctx.Done():
			return l.Tally(), fmt.Errorf("%d confirmed jobs not settled: %w", len(l.Tally().Lost), ctx.Err())
		}
	}
}
