package codec

import (
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/queuey/queuey/runtime"
)

// BenchmarkDecode decodes a job with a trace header and a small payload,
// as a consumer does for every delivery.
func BenchmarkDecode(b *testing.B) {
	env := &runtime.Envelope{
		ID: "019cb6e1-47c3-7a4e-9b1f-2c3d4e5f6070", Queue: "emails.send_email", Kind: "emails.SendEmail",
		Attempt: 1, MaxAttempts: 5, EnqueuedAt: time.Unix(1_700_000_000, 0),
		Headers: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tenant": "acme"},
		Payload: mustMarshal(sendEmail{To: "ada@example.com", Subject: "Welcome", Body: "Hello, Ada."}),
	}
	msg, err := Encode(env, Options{})
	if err != nil {
		b.Fatal(err)
	}
	d := &amqp.Delivery{ContentType: msg.ContentType, MessageId: msg.MessageId, Type: msg.Type, Body: msg.Body}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(d); err != nil {
			b.Fatal(err)
		}
	}
}
