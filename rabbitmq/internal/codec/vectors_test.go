package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/rules/waits"
	"github.com/queuey/queuey/rabbitmq/internal/plugin"
	"github.com/queuey/queuey/rabbitmq/internal/topology"
	"github.com/queuey/queuey/runtime"
)

var update = flag.Bool("update", false, "rewrite testdata/wire from the codec")

// wireDir holds the test vectors of docs/wire-format.md.
const wireDir = "../../../testdata/wire"

// The vector files, as docs/wire-format.md ("Test vectors") describes them.
type (
	vector struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Publish     vectorPublish  `json:"publish"`
		Delay       *vectorDelay   `json:"delay,omitempty"`
		HoldQueue   *vectorHold    `json:"hold_queue,omitempty"`
		Properties  vectorProps    `json:"properties"`
		Headers     map[string]any `json:"headers,omitempty"`
		BodyHex     string         `json:"body_hex"`
		Envelope    vectorEnvelope `json:"envelope"`
		PayloadHex  string         `json:"payload_hex"`
		Payload     any            `json:"payload"`
		DecodeOnly  bool           `json:"decode_only,omitempty"`
	}
	vectorPublish struct {
		Exchange   string `json:"exchange"`
		RoutingKey string `json:"routing_key"`
		Mandatory  bool   `json:"mandatory"`
	}
	vectorDelay struct {
		Mode          string `json:"mode"`
		QueueType     string `json:"queue_type"`
		DelayMS       int64  `json:"delay_ms"`
		GranularityMS int64  `json:"granularity_ms"`
	}
	vectorHold struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	vectorProps struct {
		ContentType  string `json:"content_type"`
		MessageID    string `json:"message_id"`
		MessageIDHex string `json:"message_id_hex,omitempty"` // in place of message_id, when it is not UTF-8 (JSON cannot hold it)
		Type         string `json:"type"`
		Timestamp    *int64 `json:"timestamp,omitempty"`
		DeliveryMode uint8  `json:"delivery_mode"`
		Priority     uint8  `json:"priority"`
		Expiration   string `json:"expiration,omitempty"`
	}
	vectorEnvelope struct {
		ID           string            `json:"id"`
		Kind         string            `json:"kind"`
		Queue        string            `json:"queue"`
		Attempt      int               `json:"attempt"`
		MaxAttempts  int               `json:"max_attempts"`
		Priority     uint8             `json:"priority"`
		EnqueuedAtNS string            `json:"enqueued_at_ns"`
		LastError    string            `json:"last_error"`
		Headers      map[string]string `json:"headers"`
	}
	invalidVector struct {
		Name        string      `json:"name"`
		Description string      `json:"description"`
		Properties  vectorProps `json:"properties"`
		BodyHex     string      `json:"body_hex"`
		Reason      string      `json:"reason"`
	}
)

// Payloads of the vectors: jobs as generated code would encode them.
type (
	sendEmail struct {
		To      string
		Subject string
		Body    string
	}
	chargeCard struct {
		CustomerID string
		Cents      int64
		Currency   string
	}
	upload struct {
		Name    string
		Data    []byte
		Taken   time.Time
		Ratio   float64
		Tags    []string
		Sizes   map[string]int
		Note    *string
		Thumb   struct{ Width, Height uint16 }
		Renamed string `msgpack:"renamed_field"`
	}
	extremes struct {
		MaxInt64  int64
		MinInt64  int64
		MaxUint64 uint64
		MaxUint8  uint8
		MinInt8   int8
		Float32   float32
		Empty     string
	}
)

var vectorTime = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)

// vectorCase is one valid vector: the envelope, the options it is encoded
// with, and where it is published.
type vectorCase struct {
	name, description string
	env               *runtime.Envelope
	payload           any
	opts              Options
	publish           func(env *runtime.Envelope) (vectorPublish, *vectorHold, amqp.Table)
	delay             *vectorDelay
}

func enqueue(env *runtime.Envelope) (vectorPublish, *vectorHold, amqp.Table) {
	return vectorPublish{Exchange: "", RoutingKey: env.Queue, Mandatory: true}, nil, nil
}

func holdPublish(kind admin.HoldKind, delay, granularity time.Duration, quorum bool) func(*runtime.Envelope) (vectorPublish, *vectorHold, amqp.Table) {
	return func(env *runtime.Envelope) (vectorPublish, *vectorHold, amqp.Table) {
		hold, _, err := topology.Names{}.Hold(env.Queue, kind, delay, granularity)
		if quorum {
			hold, _, err = topology.Names{}.QuorumHold(env.Queue, kind, delay, granularity)
		}
		if err != nil {
			panic(err)
		}
		return vectorPublish{Exchange: "", RoutingKey: hold.Name, Mandatory: true}, &vectorHold{Name: hold.Name, Arguments: hold.Args}, nil
	}
}

// delayedPublish is how a producer publishes a job enqueued with delay d,
// as the backend does (Backend.Publish): the delay rounded up to the
// granularity, at least one, then a hold queue or the plugin's exchange.
func delayedPublish(d vectorDelay) func(*runtime.Envelope) (vectorPublish, *vectorHold, amqp.Table) {
	g := time.Duration(d.GranularityMS) * time.Millisecond
	rounded, err := waits.RoundAtLeastOne(time.Duration(d.DelayMS)*time.Millisecond, g)
	if err != nil {
		panic(err)
	}
	if d.Mode == string(runtime.DelayPlugin) {
		return pluginPublish(rounded)
	}
	return holdPublish(admin.HoldDeferred, rounded, g, d.QueueType == string(runtime.QueueQuorum))
}

func pluginPublish(delay time.Duration) func(*runtime.Envelope) (vectorPublish, *vectorHold, amqp.Table) {
	return func(env *runtime.Envelope) (vectorPublish, *vectorHold, amqp.Table) {
		p, err := plugin.Publishing(amqp.Publishing{}, delay)
		if err != nil {
			panic(err)
		}
		return vectorPublish{Exchange: plugin.ExchangeName(runtime.QueueConfig{Name: env.Queue}), RoutingKey: env.Queue, Mandatory: false}, nil, p.Headers
	}
}

func deadPublish(env *runtime.Envelope) (vectorPublish, *vectorHold, amqp.Table) {
	return vectorPublish{Exchange: "", RoutingKey: topology.Names{}.Dead(env.Queue).Name, Mandatory: true}, nil, nil
}

func job(id, queue, kind string) *runtime.Envelope {
	return &runtime.Envelope{ID: id, Queue: queue, Kind: kind, Attempt: 1, MaxAttempts: 5, EnqueuedAt: vectorTime}
}

func vectorCases() []vectorCase {
	email := sendEmail{To: "ada@example.com", Subject: "Welcome", Body: "Hello, Ada."}
	withHeaders := job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6071", "emails.send_email", "emails.SendEmail")
	withHeaders.Headers = map[string]string{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"tenant":      "acme",
		"baggage":     "user=42",
	}
	prio := job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6072", "billing.charge_card", "emails.ChargeCard")
	prio.Priority = 5
	deferred := job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6075", "emails.send_email", "emails.SendEmail")
	deferred.Attempt, deferred.Priority = 2, 1
	retry := job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6076", "emails.send_email", "emails.SendEmail")
	retry.Attempt, retry.LastError = 2, "smtp: 421 service not available, try again later"
	dead := job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6077", "emails.send_email", "emails.SendEmail")
	dead.Attempt, dead.MaxAttempts, dead.LastError = 3, 3, "smtp: 550 mailbox unavailable"
	dead.Headers = map[string]string{"tenant": "acme"}
	uni := job("ジョブ-019cb6e1-ü", "emails.send_email", "письма.Отправить")
	uni.Headers = map[string]string{"tenant": "Zürich", "ключ": "значение 🚀"}
	uni.LastError = "échec: ☃"
	bin := job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6079", "media.upload", "media.Upload")
	maxed := &runtime.Envelope{
		ID:          strings.Repeat("i", MaxShortString),
		Queue:       strings.Repeat("q", MaxShortString),
		Kind:        strings.Repeat("k", MaxShortString-2) + ".K",
		Attempt:     math.MaxInt32,
		MaxAttempts: math.MaxInt32,
		Priority:    math.MaxUint8,
		EnqueuedAt:  time.Unix(0, math.MaxInt64).UTC(),
		LastError:   strings.Repeat("e", 70000),
		Headers:     map[string]string{},
	}
	for i := range 20 {
		maxed.Headers[fmt.Sprintf("h%02d", i)] = strings.Repeat("v", i*15)
	}
	minimal := &runtime.Envelope{ID: "1", Queue: "q", Kind: "p.T", Attempt: 1, MaxAttempts: 1, Headers: map[string]string{}}
	return []vectorCase{
		{name: "plain", description: "a job as enqueued: attempt 1, no headers, priority 0", env: job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6070", "emails.send_email", "emails.SendEmail"), payload: email, publish: enqueue},
		{name: "headers", description: "a job with job headers, written sorted by name", env: withHeaders, payload: email, publish: enqueue},
		{name: "priority", description: "a job enqueued at priority 5: the AMQP priority is the envelope's", env: prio, payload: chargeCard{CustomerID: "cus_42", Cents: 1999, Currency: "EUR"}, opts: Options{Priority: 5}, publish: enqueue},
		{name: "delayed_hold", description: "a job enqueued with a delay of 1.5s on a classic queue, granularity 1s: published to the hold queue of 2000 ms, declared first with these arguments", env: job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6073", "emails.send_email", "emails.SendEmail"), payload: email, delay: &vectorDelay{"queue", "classic", 1500, 1000}},
		{name: "delayed_hold_long", description: "a job enqueued with a delay of 1h0m0.2s on a classic queue, granularity 1s: x-expires is twice the TTL", env: job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f607c", "emails.send_email", "emails.SendEmail"), payload: email, delay: &vectorDelay{"queue", "classic", 3600200, 1000}},
		{name: "delayed_hold_short", description: "a job enqueued with a delay of 1ms on a classic queue, granularity 1s: one granularity, x-expires the TTL plus 1s", env: job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f607d", "emails.send_email", "emails.SendEmail"), payload: email, delay: &vectorDelay{"queue", "classic", 1, 1000}},
		{name: "delayed_quorum", description: "a job enqueued with a delay of 9s on a quorum queue, granularity 1s: the ladder's rung of 10s", env: job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6074", "emails.send_email", "emails.SendEmail"), payload: email, delay: &vectorDelay{"queue", "quorum", 9000, 1000}},
		{name: "delayed_quorum_long", description: "a job enqueued with a delay of 1h on a quorum queue, granularity 1s: the ladder's rung of 4096s", env: job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f607e", "emails.send_email", "emails.SendEmail"), payload: email, delay: &vectorDelay{"queue", "quorum", 3600000, 1000}},
		{name: "delayed_plugin", description: "a job enqueued with a delay of 1.5s through the delayed-message plugin, granularity 1s: x-delay 2000, not mandatory", env: job("019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6078", "emails.send_email", "emails.SendEmail"), payload: email, delay: &vectorDelay{"plugin", "classic", 1500, 1000}},
		{name: "deferred", description: "a worker's deferral for 5s of a job of priority 1 on a queue of max_priority 10: it travels at priority 10, its envelope keeps 1", env: deferred, payload: email, opts: Options{Priority: 10}, publish: holdPublish(admin.HoldDeferred, 5*time.Second, time.Second, false)},
		{name: "retry", description: "a worker's retry after 2s: attempt 2, the last error in the body", env: retry, payload: email, publish: holdPublish(admin.HoldRetry, 2*time.Second, time.Second, false)},
		{name: "dead_letter", description: "a job out of attempts, as a worker moves it to q.dead: the reason, the time, queue, attempts and last error in AMQP headers", env: dead, payload: email, opts: Options{DeadReason: "smtp: 550 mailbox unavailable", DeadAt: time.Date(2026, 3, 4, 5, 9, 12, 345678900, time.UTC)}, publish: deadPublish},
		{name: "unicode", description: "UTF-8 in the message id, the kind, job headers, the last error and the payload", env: uni, payload: sendEmail{To: "zoë@exämple.org", Subject: "héllo 世界 🚀", Body: "ß\u00a0\u200b\U0001F600"}, publish: enqueue},
		{name: "binary_fields", description: "a payload with bin, a timestamp, a float, a list, a map, a nil pointer, a nested struct and a field renamed by its msgpack tag", env: bin, payload: upload{
			Name: "photo.jpg", Data: []byte{0x00, 0xff, 0xc0, 0x90, 0x80, 0x01}, Taken: vectorTime, Ratio: 1.5,
			Tags: []string{"a", "b"}, Sizes: map[string]int{"s": 1}, Thumb: struct{ Width, Height uint16 }{640, 480}, Renamed: "r",
		}, publish: enqueue},
		{name: "max_values", description: "every field at its largest: 255-byte id, kind and queue, attempt and max attempts 2^31-1, priority 255, enqueued_at 2^63-1, a 70000-byte last error (str 32), 20 headers (map 16), and payload integers at their limits", env: maxed, payload: extremes{
			MaxInt64: math.MaxInt64, MinInt64: math.MinInt64, MaxUint64: math.MaxUint64, MaxUint8: math.MaxUint8, MinInt8: math.MinInt8, Float32: 0.25,
		}, opts: Options{Priority: 255}, publish: enqueue},
		{name: "minimal", description: "the least a job can be: enqueued_at 0 (no timestamp property), an empty header map, max_attempts 1", env: minimal, payload: map[string]any{}, publish: enqueue},
	}
}

// decodeOnly are bodies a format 1 reader takes that a format 1 producer
// does not write.
func decodeOnly() []struct {
	name, description string
	body              []byte
	env               *runtime.Envelope
} {
	payload := mustMarshal(sendEmail{To: "ada@example.com"})
	future := []byte{0x99, 0x01, 0x05, 0x00, 0x00, 0xa1, 'q', 0xa0, 0xc0, 0x2a, 0x81, 0xa1, 'x', 0x93, 1, 2, 3}
	nils := []byte{0x97, 0xcd, 0x00, 0x01, 0xd0, 0x05, 0xd1, 0x00, 0x03, 0xd3, 0, 0, 0, 0, 0, 0, 0, 7, 0xd9, 0x01, 'q', 0xc0, 0xc0}
	return []struct {
		name, description string
		body              []byte
		env               *runtime.Envelope
	}{
		{"future_fields", "an array of 9 fields: a reader skips the two it does not know", append(future, payload...),
			&runtime.Envelope{ID: "019cb6e1-47c3-7a4e-9b1f-2c3d4e5f607a", Kind: "emails.SendEmail", Queue: "q", Attempt: 1, MaxAttempts: 5, Payload: payload}},
		{"wide_encodings", "integers in wider encodings than needed (uint 16, int 8, int 16, int 64), the queue as str 8, the last error as nil", append(nils, payload...),
			&runtime.Envelope{ID: "019cb6e1-47c3-7a4e-9b1f-2c3d4e5f607b", Kind: "emails.SendEmail", Queue: "q", Attempt: 1, MaxAttempts: 5, Priority: 3, EnqueuedAt: time.Unix(0, 7).UTC(), Payload: payload}},
	}
}

// invalidCases are messages a worker moves to q.dead, with Decode's
// error.
func invalidCases() []struct {
	name, description string
	props             vectorProps
	body              []byte
} {
	ok := vectorProps{ContentType: ContentType, MessageID: "019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6080", Type: "emails.SendEmail", DeliveryMode: 2}
	with := func(f func(*vectorProps)) vectorProps { p := ok; f(&p); return p }
	payload := mustMarshal(sendEmail{To: "ada@example.com"})
	fields := func(b ...byte) []byte { return append(b, payload...) }
	return []struct {
		name, description string
		props             vectorProps
		body              []byte
	}{
		{"content_type", "another content type", with(func(p *vectorProps) { p.ContentType = "application/json" }), []byte(`{"To":"ada@example.com"}`)},
		{"no_content_type", "no content type", with(func(p *vectorProps) { p.ContentType = "" }), fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0xc0)},
		{"no_message_id", "no message id", with(func(p *vectorProps) { p.MessageID = "" }), fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0xc0)},
		{"not_an_array", "the payload alone, without the envelope's fields", ok, payload},
		{"empty_body", "an empty body", ok, nil},
		{"six_fields", "an array of 6 fields", ok, fields(0x96, 1, 5, 0, 0, 0xa1, 'q', 0xa0)},
		{"attempt_zero", "attempt 0", ok, fields(0x97, 0, 5, 0, 0, 0xa1, 'q', 0xa0, 0xc0)},
		{"max_attempts_too_large", "max attempts 2^31", ok, fields(0x97, 1, 0xce, 0x80, 0, 0, 0, 0, 0, 0xa1, 'q', 0xa0, 0xc0)},
		{"priority_256", "priority 256", ok, fields(0x97, 1, 5, 0xcd, 0x01, 0x00, 0, 0xa1, 'q', 0xa0, 0xc0)},
		{"negative_priority", "priority -1", ok, fields(0x97, 1, 5, 0xff, 0, 0xa1, 'q', 0xa0, 0xc0)},
		{"float_attempt", "attempt as a float", ok, fields(0x97, 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0xa1, 'q', 0xa0, 0xc0)},
		{"enqueued_at_uint64", "enqueued_at above 2^63-1", ok, fields(0x97, 1, 5, 0, 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xa1, 'q', 0xa0, 0xc0)},
		{"empty_queue", "an empty queue", ok, fields(0x97, 1, 5, 0, 0, 0xa0, 0xa0, 0xc0)},
		{"queue_as_bin", "the queue as bin, not str", ok, fields(0x97, 1, 5, 0, 0, 0xc4, 0x01, 'q', 0xa0, 0xc0)},
		{"header_not_string", "a job header whose value is an integer", ok, fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0x81, 0xa1, 'a', 0x01)},
		{"headers_as_array", "headers as an array", ok, fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0x90)},
		{"truncated", "an array that claims 7 fields and holds 5", ok, []byte{0x97, 1, 5, 0, 0, 0xa1, 'q'}},
		{"message_id_not_utf8", "a message id that is not UTF-8 (given in message_id_hex)", with(func(p *vectorProps) { p.MessageID = "job-\xff\xfe" }), fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0xc0)},
		{"expiration", "an expiration property: a job must not expire", with(func(p *vectorProps) { p.Expiration = "60000" }), fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0xc0)},
		{"queue_not_utf8", "a queue that is not UTF-8", ok, fields(0x97, 1, 5, 0, 0, 0xa2, 'q', 0xff, 0xa0, 0xc0)},
		{"last_error_not_utf8", "a last error that is not UTF-8", ok, fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa1, 0xc3, 0xc0)},
		{"header_twice", "a job header name twice", ok, fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0x82, 0xa1, 'a', 0xa1, 'x', 0xa1, 'a', 0xa1, 'y')},
		{"header_value_nil", "a job header whose value is nil", ok, fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0x81, 0xa1, 'a', 0xc0)},
		{"header_name_nil", "a job header whose name is nil", ok, fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0x81, 0xc0, 0xa1, 'a')},
		{"header_not_utf8", "a job header value that is not UTF-8", ok, fields(0x97, 1, 5, 0, 0, 0xa1, 'q', 0xa0, 0x81, 0xa1, 'a', 0xa1, 0x80)},
	}
}

func mustMarshal(v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestVectors writes testdata/wire with -update, and otherwise checks that
// the codec encodes every vector's envelope to exactly its bytes and
// decodes its bytes back to its envelope, and refuses every invalid one
// with its reason.
func TestVectors(t *testing.T) {
	want := map[string][]byte{}
	for _, c := range vectorCases() {
		c.env.Payload = mustMarshal(c.payload)
		msg, err := Encode(c.env, c.opts)
		if err != nil {
			t.Fatalf("%s: Encode: %v", c.name, err)
		}
		if c.delay != nil {
			c.publish = delayedPublish(*c.delay)
		}
		pub, hold, headers := c.publish(c.env)
		if headers != nil {
			msg.Headers = headers
		}
		want[c.name+".json"] = marshalVector(t, c.name, c.description, pub, hold, msg, c.env, false, c.delay)
	}
	for _, c := range decodeOnly() {
		msg := amqp.Publishing{ContentType: ContentType, MessageId: c.env.ID, Type: c.env.Kind, DeliveryMode: amqp.Persistent, Priority: c.env.Priority, Timestamp: c.env.EnqueuedAt, Body: c.body}
		want[c.name+".json"] = marshalVector(t, c.name, c.description, vectorPublish{RoutingKey: c.env.Queue, Mandatory: true}, nil, msg, c.env, true, nil)
	}
	for _, c := range invalidCases() {
		_, err := Decode(&amqp.Delivery{ContentType: c.props.ContentType, MessageId: c.props.MessageID, Type: c.props.Type, DeliveryMode: c.props.DeliveryMode, Expiration: c.props.Expiration, Body: c.body})
		if err == nil {
			t.Fatalf("invalid/%s: Decode accepted it", c.name)
		}
		if !utf8.ValidString(c.props.MessageID) {
			c.props.MessageIDHex, c.props.MessageID = hex.EncodeToString([]byte(c.props.MessageID)), ""
		}
		want[filepath.Join("invalid", c.name+".json")] = indentJSON(t, invalidVector{Name: c.name, Description: c.description, Properties: c.props, BodyHex: hex.EncodeToString(c.body), Reason: err.Error()})
	}

	if *update {
		// Only the codec's own vectors go: testdata/wire/ladder belongs
		// to the topology package's test.
		old, err := filepath.Glob(filepath.Join(wireDir, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(wireDir, "invalid")); err != nil {
			t.Fatal(err)
		}
		for _, p := range old {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(wireDir, "invalid"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			if err := os.WriteFile(filepath.Join(wireDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}

	got, err := filepath.Glob(filepath.Join(wireDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	invalid, err := filepath.Glob(filepath.Join(wireDir, "invalid", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range append(got, invalid...) {
		rel, _ := filepath.Rel(wireDir, p)
		names = append(names, rel)
	}
	var wantNames []string
	for name := range want {
		wantNames = append(wantNames, name)
	}
	slices.Sort(names)
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Errorf("testdata/wire holds %v, want %v (go test ./rabbitmq/internal/codec/ -run Vectors -update)", names, wantNames)
	}
	for name, b := range want {
		file, err := os.ReadFile(filepath.Join(wireDir, name))
		if err != nil {
			t.Errorf("%v (go test ./rabbitmq/internal/codec/ -run Vectors -update)", err)
			continue
		}
		if !bytes.Equal(file, b) {
			t.Errorf("testdata/wire/%s differs from what the codec writes (go test ./rabbitmq/internal/codec/ -run Vectors -update)", name)
		}
		if strings.HasPrefix(name, "invalid") {
			checkInvalid(t, name, file)
		} else {
			checkDecode(t, name, file)
		}
	}
}

// marshalVector is the vector file of msg, published as pub.
func marshalVector(t *testing.T, name, description string, pub vectorPublish, hold *vectorHold, msg amqp.Publishing, env *runtime.Envelope, decodeOnly bool, delay *vectorDelay) []byte {
	t.Helper()
	v := vector{
		Name: name, Description: description, Publish: pub, Delay: delay, HoldQueue: hold,
		Properties: props(msg), Headers: msg.Headers, BodyHex: hex.EncodeToString(msg.Body),
		Envelope: vectorEnvelope{
			ID: env.ID, Kind: env.Kind, Queue: env.Queue, Attempt: env.Attempt, MaxAttempts: env.MaxAttempts,
			Priority: env.Priority, EnqueuedAtNS: strconv.FormatInt(unixNano(env.EnqueuedAt), 10),
			LastError: env.LastError, Headers: env.Headers,
		},
		PayloadHex: hex.EncodeToString(env.Payload),
		Payload:    payloadJSON(t, env.Payload),
		DecodeOnly: decodeOnly,
	}
	return indentJSON(t, v)
}

func props(msg amqp.Publishing) vectorProps {
	p := vectorProps{ContentType: msg.ContentType, MessageID: msg.MessageId, Type: msg.Type, DeliveryMode: msg.DeliveryMode, Priority: msg.Priority}
	if !msg.Timestamp.IsZero() {
		s := msg.Timestamp.Unix()
		p.Timestamp = &s
	}
	return p
}

func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// payloadJSON is payload, msgpack, as the vectors write it in JSON.
func payloadJSON(t *testing.T, payload []byte) any {
	t.Helper()
	var v any
	if err := msgpack.Unmarshal(payload, &v); err != nil {
		t.Fatalf("payload %x: %v", payload, err)
	}
	return toJSON(v)
}

func toJSON(v any) any {
	const exact = 1 << 53
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = toJSON(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = toJSON(e)
		}
		return s
	case []byte:
		return map[string]string{"$bytes": base64.StdEncoding.EncodeToString(x)}
	case time.Time:
		return map[string]string{"$time": x.UTC().Format(time.RFC3339Nano)}
	case int8, int16, int32, int64:
		n := reflectInt(x)
		if n > exact || n < -exact {
			return map[string]string{"$int": strconv.FormatInt(n, 10)}
		}
		return n
	case uint8, uint16, uint32, uint64:
		n := reflectUint(x)
		if n > exact {
			return map[string]string{"$int": strconv.FormatUint(n, 10)}
		}
		return n
	}
	return v
}

func reflectInt(v any) int64 {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	}
	return v.(int64)
}

func reflectUint(v any) uint64 {
	switch x := v.(type) {
	case uint8:
		return uint64(x)
	case uint16:
		return uint64(x)
	case uint32:
		return uint64(x)
	}
	return v.(uint64)
}

// checkDecode decodes a vector file's body and compares it with its
// envelope, as a reader in another language would.
func checkDecode(t *testing.T, name string, file []byte) {
	t.Helper()
	var v vector
	if err := json.Unmarshal(file, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	body, err := hex.DecodeString(v.BodyHex)
	if err != nil {
		t.Fatalf("%s: body_hex: %v", name, err)
	}
	payload, err := hex.DecodeString(v.PayloadHex)
	if err != nil {
		t.Fatalf("%s: payload_hex: %v", name, err)
	}
	got, err := Decode(&amqp.Delivery{ContentType: v.Properties.ContentType, MessageId: v.Properties.MessageID, Type: v.Properties.Type, Body: body})
	if err != nil {
		t.Fatalf("%s: Decode: %v", name, err)
	}
	ns, err := strconv.ParseInt(v.Envelope.EnqueuedAtNS, 10, 64)
	if err != nil {
		t.Fatalf("%s: enqueued_at_ns: %v", name, err)
	}
	want := &runtime.Envelope{
		ID: v.Envelope.ID, Kind: v.Envelope.Kind, Queue: v.Envelope.Queue, Attempt: v.Envelope.Attempt, MaxAttempts: v.Envelope.MaxAttempts,
		Priority: v.Envelope.Priority, EnqueuedAt: fromUnixNano(ns), LastError: v.Envelope.LastError, Headers: v.Envelope.Headers, Payload: payload,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: decoded (-want +got):\n%s", name, diff)
	}
}

// checkInvalid checks that the codec refuses an invalid vector's message
// with its reason.
func checkInvalid(t *testing.T, name string, file []byte) {
	t.Helper()
	var v invalidVector
	if err := json.Unmarshal(file, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	body, err := hex.DecodeString(v.BodyHex)
	if err != nil {
		t.Fatalf("%s: body_hex: %v", name, err)
	}
	id := v.Properties.MessageID
	if v.Properties.MessageIDHex != "" {
		b, err := hex.DecodeString(v.Properties.MessageIDHex)
		if err != nil {
			t.Fatalf("%s: message_id_hex: %v", name, err)
		}
		id = string(b)
	}
	_, err = Decode(&amqp.Delivery{ContentType: v.Properties.ContentType, MessageId: id, Type: v.Properties.Type, Expiration: v.Properties.Expiration, Body: body})
	if err == nil || err.Error() != v.Reason {
		t.Errorf("%s: Decode = %v, want %q", name, err, v.Reason)
	}
}
