package rabbitmq

import (
	"bytes"
	"net"
	"testing"
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
