package e2e

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Tap is a TCP proxy on 127.0.0.1 in front of an AMQP broker that counts
// what crosses it, frame by frame, in each direction: bytes, frames by
// kind (method frames by AMQP method, content headers, bodies) and how
// many basic.ack frames have multiple set. It shows what a client costs on
// the wire: the size of each message's content header (its properties and
// header table), how many frames a publish takes, how acks and confirms
// are coalesced and how many channels are opened.
type Tap struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	stats [2]Wire // [ToBroker], [FromBroker]
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Directions of a Tap's counts.
const (
	ToBroker   = 0
	FromBroker = 1
)

// Wire is what crossed a Tap in one direction.
type Wire struct {
	Bytes int64
	// Frames counts frames by kind: the AMQP method's name for method
	// frames ("basic.publish"), "content-header", "content-body",
	// "heartbeat".
	Frames map[string]int64
	// HeaderBytes is the size of every content-header frame, all told.
	HeaderBytes int64
	// AckMultiple counts basic.ack frames with multiple set.
	AckMultiple int64
}

// NewTap listens on 127.0.0.1 and forwards each connection to the broker
// at amqpURL's host and port.
func NewTap(amqpURL string) (*Tap, error) {
	u, err := url.Parse(amqpURL)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &Tap{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	t.Reset()
	t.wg.Go(t.accept)
	return t, nil
}

// URL returns amqpURL with its host and port replaced by the tap's.
func (t *Tap) URL(amqpURL string) string {
	u, err := url.Parse(amqpURL)
	if err != nil {
		return amqpURL
	}
	u.Host = t.ln.Addr().String()
	return u.String()
}

// Reset zeroes the counts.
func (t *Tap) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.stats {
		t.stats[i] = Wire{Frames: map[string]int64{}}
	}
}

// Counts returns a copy of the counts so far.
func (t *Tap) Counts() [2]Wire {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out [2]Wire
	for i, w := range t.stats {
		out[i] = w
		out[i].Frames = maps.Clone(w.Frames)
	}
	return out
}

// Close stops listening, closes every connection through the tap and
// waits until its goroutines have ended.
func (t *Tap) Close() error {
	err := t.ln.Close()
	t.mu.Lock()
	for c := range t.conns {
		_ = c.Close()
	}
	t.mu.Unlock()
	t.wg.Wait()
	return err
}

func (t *Tap) accept() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", t.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		t.mu.Lock()
		t.conns[c], t.conns[b] = struct{}{}, struct{}{}
		t.mu.Unlock()
		t.wg.Go(func() { t.pipe(c, b, ToBroker) })
		t.wg.Go(func() { t.pipe(b, c, FromBroker) })
	}
}

// pipe copies src to dst, frame by frame, counting each frame before it
// passes on, until either side closes. Frames are written out in bulk
// whenever no more input is buffered.
func (t *Tap) pipe(src, dst net.Conn, dir int) {
	defer func() { _ = src.Close(); _ = dst.Close() }()
	r := bufio.NewReaderSize(src, 64<<10)
	w := bufio.NewWriterSize(dst, 64<<10)
	forward := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		return r.Buffered() > 0 || w.Flush() == nil
	}
	if dir == ToBroker {
		var proto [8]byte // "AMQP" 0 0 9 1
		if _, err := io.ReadFull(r, proto[:]); err != nil {
			return
		}
		t.count(dir, 8, "", 0, false)
		if !forward(proto[:]) {
			return
		}
	}
	var head [7]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return
		}
		size := binary.BigEndian.Uint32(head[3:])
		frame := make([]byte, len(head)+int(size)+1) // and the frame-end octet
		copy(frame, head[:])
		if _, err := io.ReadFull(r, frame[len(head):]); err != nil {
			return
		}
		payload := frame[len(head) : len(head)+int(size)]
		n := int64(len(frame))
		switch head[0] {
		case 1:
			name, multiple := method(payload)
			t.count(dir, n, name, 0, multiple)
		case 2:
			t.count(dir, n, "content-header", n, false)
		case 3:
			t.count(dir, n, "content-body", 0, false)
		case 8:
			t.count(dir, n, "heartbeat", 0, false)
		default:
			t.count(dir, n, fmt.Sprintf("frame-type-%d", head[0]), 0, false)
		}
		if !forward(frame) {
			return
		}
	}
}

func (t *Tap) count(dir int, n int64, kind string, header int64, multiple bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := &t.stats[dir]
	w.Bytes += n
	if kind != "" {
		w.Frames[kind]++
	}
	w.HeaderBytes += header
	if multiple {
		w.AckMultiple++
	}
}

var methods = map[[2]uint16]string{
	{10, 10}: "connection.start", {10, 11}: "connection.start-ok", {10, 30}: "connection.tune",
	{10, 31}: "connection.tune-ok", {10, 40}: "connection.open", {10, 41}: "connection.open-ok",
	{10, 50}: "connection.close", {10, 51}: "connection.close-ok",
	{20, 10}: "channel.open", {20, 11}: "channel.open-ok", {20, 40}: "channel.close", {20, 41}: "channel.close-ok",
	{50, 10}: "queue.declare", {50, 11}: "queue.declare-ok", {50, 40}: "queue.delete", {50, 41}: "queue.delete-ok",
	{60, 10}: "basic.qos", {60, 11}: "basic.qos-ok", {60, 20}: "basic.consume", {60, 21}: "basic.consume-ok",
	{60, 30}: "basic.cancel", {60, 31}: "basic.cancel-ok",
	{60, 40}: "basic.publish", {60, 50}: "basic.return", {60, 60}: "basic.deliver", {60, 80}: "basic.ack",
	{60, 90}: "basic.reject", {60, 120}: "basic.nack", {85, 10}: "confirm.select", {85, 11}: "confirm.select-ok",
}

// method names a method frame's payload, and reports a basic.ack with
// multiple set.
func method(p []byte) (string, bool) {
	if len(p) < 4 {
		return "method?", false
	}
	id := [2]uint16{binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:])}
	name, ok := methods[id]
	if !ok {
		name = fmt.Sprintf("method-%d.%d", id[0], id[1])
	}
	multiple := id == [2]uint16{60, 80} && len(p) >= 13 && p[12]&1 == 1
	return name, multiple
}

// PerJob lists w per job: bytes, content-header bytes and each kind of
// frame, most frequent first.
func (w Wire) PerJob(jobs int) string {
	j := float64(jobs)
	var b strings.Builder
	fmt.Fprintf(&b, "%.0f B/job (content header %.0f B/msg)", float64(w.Bytes)/j, float64(w.HeaderBytes)/max(float64(w.Frames["content-header"]), 1))
	kinds := slices.SortedFunc(maps.Keys(w.Frames), func(a, b string) int { return int(w.Frames[b] - w.Frames[a]) })
	for _, k := range kinds {
		if per := float64(w.Frames[k]) / j; per >= 0.001 {
			fmt.Fprintf(&b, ", %s %.3f", k, per)
		} else {
			fmt.Fprintf(&b, ", %s %d", k, w.Frames[k])
		}
	}
	if w.AckMultiple > 0 {
		fmt.Fprintf(&b, " (multiple %d)", w.AckMultiple)
	}
	return b.String()
}
