package backendtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

// leaser returns a backend of nb as a runtime.Leaser, skipping t when it
// is not one.
func leaser(t *testing.T, nb func(*testing.T) runtime.Backend) runtime.Leaser {
	l, ok := nb(t).(runtime.Leaser)
	if !ok {
		t.Skip("backend does not implement runtime.Leaser")
	}
	return l
}

// testLeaseHandover: of two contenders, one holds the lease; the other
// gets it, with the mark stored, only once the first releases it; a third
// gets the mark the second stored. (All three contend through one backend
// value, since a MemoryBackend's leases are those of its process.)
func testLeaseHandover(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	name := uniqueName(t)
	a := leaser(t, nb)
	b, c := a, a
	first, err := a.AcquireLease(ctxT(t), name)
	if err != nil {
		t.Fatalf("AcquireLease: %v", err)
	}
	if !first.Mark().IsZero() {
		t.Errorf("new lease has mark %v, want none", first.Mark())
	}
	got := make(chan runtime.HeldLease, 1)
	go func() {
		h, err := b.AcquireLease(ctxT(t), name)
		if err != nil {
			t.Errorf("second AcquireLease: %v", err)
			close(got)
			return
		}
		got <- h
	}()
	mark := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := first.Advance(ctxT(t), mark); err != nil {
		t.Fatalf("Advance: %v", err)
	}
	if m := first.Mark(); !m.Equal(mark) {
		t.Errorf("Mark after Advance = %v, want %v", m, mark)
	}
	select {
	case <-got:
		t.Fatal("a second contender got the lease while the first held it")
	default:
	}
	if err := first.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	recv(t, first.Lost(), "Lost to close after Release")
	second := recv(t, got, "the second contender to get the lease")
	if second == nil {
		t.FailNow()
	}
	if m := second.Mark(); !m.Equal(mark) {
		t.Errorf("second holder's Mark = %v, want %v", m, mark)
	}
	mark2 := mark.Add(time.Hour)
	if err := second.Advance(ctxT(t), mark2); err != nil {
		t.Fatalf("second Advance: %v", err)
	}
	if err := second.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	third, err := c.AcquireLease(ctxT(t), name)
	if err != nil {
		t.Fatalf("third AcquireLease: %v", err)
	}
	defer third.Release()
	if m := third.Mark(); !m.Equal(mark2) {
		t.Errorf("third holder's Mark = %v, want %v", m, mark2)
	}
}

// testLeaseContextAndClose: a contender gives up when its context ends; a
// holder's lease is lost when its backend closes, and a closed backend
// contends no more.
func testLeaseContextAndClose(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	name := uniqueName(t)
	holderBackend := nb(t)
	a, ok := holderBackend.(runtime.Leaser)
	if !ok {
		t.Skip("backend does not implement runtime.Leaser")
	}
	b := a
	held, err := a.AcquireLease(ctxT(t), name)
	if err != nil {
		t.Fatalf("AcquireLease: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := b.AcquireLease(ctx, name); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireLease of a held lease with a context that ends = %v, want context.DeadlineExceeded", err)
	}
	if err := holderBackend.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	recv(t, held.Lost(), "Lost to close when the backend closes")
	if _, err := a.AcquireLease(ctxT(t), name); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("AcquireLease on a closed backend = %v, want ErrClosed", err)
	}
}
