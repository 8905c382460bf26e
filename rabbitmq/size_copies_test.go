package rabbitmq_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/rabbitmq"
	"github.com/queuey/queuey/runtime"
)

// TestDeadLetterOfAJobFillingItsFrame: with job headers in the content
// header, a job whose headers nearly fill a frame dead-letters (the reason
// and last error added would not fit: the copy travels in the body format)
// with nothing lost, and is re-driven (the re-drive headers added would not
// fit either), and the publishing connection stays up.
func TestDeadLetterOfAJobFillingItsFrame(t *testing.T) {
	b := dial(t, rabbitmq.Options{HeaderEnvelopes: true})
	q, p := jobQueue(t, b)
	pub, _ := rabbitmq.Connections(b)
	big := strings.Repeat("h", 126_000)
	failure := strings.Repeat("e", 5000)

	runs := make(chan runtime.Info, 2)
	runWorker(t, b, q, func(ctx context.Context, _ job) error {
		info, _ := runtime.InfoFromContext(ctx)
		runs <- info
		if info.Headers[runtime.HeaderRedrives] == "" {
			return runtime.Permanent(errors.New(failure))
		}
		return nil
	})
	id, err := runtime.Enqueue(ctxT(t), p, q, job{N: 1}, runtime.WithHeaders(map[string]string{"big": big}))
	if err != nil {
		t.Fatalf("enqueue of a job with a %d-byte header: %v", len(big), err)
	}
	within(t, runs, "the first run")

	var letter runtime.DeadLetterInfo
	deadline := time.Now().Add(wait)
	for letter.ID == "" {
		list, err := b.DeadLetters(ctxT(t), q.Name, runtime.DeadLetterPage{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Letters) > 0 {
			letter = list.Letters[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("no dead letter within %v", wait)
		} else {
			time.Sleep(20 * time.Millisecond) // poll interval, not a synchronisation
		}
	}
	if letter.ID != id || letter.Headers["big"] != big || !strings.Contains(letter.LastError, "eeee") || !strings.Contains(letter.Reason, "eeee") {
		t.Errorf("dead letter %q: %d-byte header, last error %.20q, reason %.20q; want job %q with all of it", letter.ID, len(letter.Headers["big"]), letter.LastError, letter.Reason, id)
	}

	res, err := b.RedriveDeadLetters(ctxT(t), q.Name, runtime.DeadLetterSelector{All: true}, nil)
	if err != nil || len(res.Moved) != 1 {
		t.Fatalf("re-drive: %+v, %v; want the letter moved", res, err)
	}
	if info := within(t, runs, "the re-driven run"); info.ID != id || info.Headers["big"] != big {
		t.Errorf("re-driven run of %q with a %d-byte header; want %q with it whole", info.ID, len(info.Headers["big"]), id)
	}
	samePublishConnection(t, b, pub)
}
