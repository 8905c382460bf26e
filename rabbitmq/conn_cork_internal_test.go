package rabbitmq

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// writeLog is a net.Conn that records each write it is given.
type writeLog struct {
	net.Conn
	writes [][]byte
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func TestCorkConn(t *testing.T) {
	log := &writeLog{}
	c := &corkConn{Conn: log}

	mustWrite := func(s string) {
		t.Helper()
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	mustWrite("a")
	if len(log.writes) != 1 {
		t.Fatalf("uncorked write: %d writes reached the socket, want 1", len(log.writes))
	}

	c.cork()
	c.cork() // nested: a batch run, and a publish inside it
	mustWrite("b")
	mustWrite("c")
	c.uncork()
	if len(log.writes) != 1 {
		t.Fatalf("after the inner uncork: %d writes, want still 1", len(log.writes))
	}
	mustWrite("d")
	c.uncork()
	if len(log.writes) != 2 || string(log.writes[1]) != "bcd" {
		t.Fatalf("after the last uncork: writes %q, want [a bcd]", log.writes)
	}

	// A corked stretch never holds more than corkMax: what would overflow
	// it sends what was held, in order, and is held in its place; what is
	// larger than corkMax goes out at once.
	c.cork()
	mustWrite("e")
	big := string(bytes.Repeat([]byte{'x'}, corkMax))
	mustWrite(big)
	if len(log.writes) != 3 || string(log.writes[2]) != "e" {
		t.Fatalf("overflowing write: %d writes, want the held e sent, the big one held", len(log.writes))
	}
	huge := big + "y"
	mustWrite(huge)
	if len(log.writes) != 5 || string(log.writes[3]) != big || string(log.writes[4]) != huge {
		t.Fatalf("write larger than corkMax: %d writes, want the held one, then it", len(log.writes))
	}
	c.uncork()
	if len(log.writes) != 5 {
		t.Fatalf("uncork with nothing held wrote %d times", len(log.writes)-5)
	}

	var none *corkConn
	none.cork()
	none.uncork() // a channel on a connection dialled without one: no-op
}

// deadlineConn records the read deadlines set on it.
type deadlineConn struct {
	net.Conn
	set []time.Time
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.set = append(c.set, t)
	return nil
}

func (c *deadlineConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// TestCorkConnReadDeadline checks which read deadlines reach the socket: a
// later one within deadlineSlack of the one set does not; a later one past
// it, an earlier one, a cleared one, and any after SetDeadline do. Close to
// a deadline the slack shrinks to a quarter of the time left.
func TestCorkConnReadDeadline(t *testing.T) {
	sock := &deadlineConn{}
	c := &corkConn{Conn: sock}
	t0 := time.Now().Add(30 * time.Second) // as a 10s heartbeat asks
	t1 := time.Now().Add(2 * time.Second)  // as a 1s heartbeat would
	steps := []struct {
		set    func() error
		at     time.Time
		pushed bool
	}{
		{nil, t0, true},
		{nil, t0.Add(deadlineSlack / 2), false},
		{nil, t0.Add(deadlineSlack - 1), false},
		{nil, t0.Add(deadlineSlack), true},
		{nil, t0, true}, // earlier
		{nil, time.Time{}, true},
		{nil, t0, true}, // after clearing
		{func() error { return c.SetDeadline(t0.Add(time.Minute)) }, t0.Add(time.Minute), true},
		{nil, t0.Add(time.Minute + deadlineSlack/2), false},
		{func() error { return c.SetDeadline(time.Time{}) }, time.Time{}, true},
		{nil, t1, true},
		{nil, t1.Add(100 * time.Millisecond), false},
		{nil, t1.Add(900 * time.Millisecond), true}, // past a quarter of the time left
	}
	for i, s := range steps {
		before := len(sock.set)
		set := s.set
		if set == nil {
			set = func() error { return c.SetReadDeadline(s.at) }
		}
		if err := set(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		pushed := len(sock.set) > before
		if pushed != s.pushed {
			t.Errorf("step %d (deadline %v): reached the socket %v, want %v", i, s.at, pushed, s.pushed)
		}
		if pushed && !sock.set[len(sock.set)-1].Equal(s.at) {
			t.Errorf("step %d: socket deadline %v, want %v", i, sock.set[len(sock.set)-1], s.at)
		}
	}
}
