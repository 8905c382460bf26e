package codec

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"
)

// TestDecodeDeeplyNestedFieldIsInvalid: a body whose eighth field (one this
// version skips) is an array nested millions deep, 12 MB that the broker
// accepts (max_message_size is 128 MB on 3.x), is refused as invalid. It
// must not overflow the consumer's stack: that is a fatal error no recover
// catches, the worker process dies, and the message, redelivered, kills
// the next one. The decode runs in a child process so that the crash shows
// as a failure of this test.
func TestDecodeDeeplyNestedFieldIsInvalid(t *testing.T) {
	const depth = 12 << 20
	if os.Getenv("QUEUEY_DEEP_CHILD") == "1" {
		b := []byte{0x98, 1, 1, 0, 0, 0xa1, 'q', 0xa0, 0xc0}
		b = append(b, bytes.Repeat([]byte{0x91}, depth)...)
		b = append(b, 0xc0)
		_, err := Decode(&amqp.Delivery{ContentType: ContentType, MessageId: "id", Body: b})
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("Decode of a field nested %d deep = %v, want ErrInvalid", depth, err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDecodeDeeplyNestedFieldIsInvalid$", "-test.count=1")
	cmd.Env = append(os.Environ(), "QUEUEY_DEEP_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		if i := bytes.Index(out, []byte("fatal error")); i >= 0 {
			out = out[i:min(len(out), i+200)]
		}
		t.Fatalf("decoding a field nested %d deep: %v\n%s", depth, err, out)
	}
}
