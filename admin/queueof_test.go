package admin_test

import (
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

func TestQueueOf(t *testing.T) {
	t.Parallel()
	q := runtime.QueueConfig{Name: "q", MaxAttempts: 3, RetryBase: time.Second, RetryMax: time.Minute, QueueType: runtime.QueueQuorum, Delay: runtime.DelayPlugin, Prefetch: 7}
	want := admin.Queue{Name: "q", MaxAttempts: 3, RetryBase: time.Second, RetryMax: time.Minute, Quorum: true, PluginDelay: true}
	if got := admin.QueueOf(q); got != want {
		t.Errorf("QueueOf = %+v, want %+v", got, want)
	}
	if got := admin.QueueOf(runtime.QueueConfig{Name: "q", Delay: runtime.DelayLadder}); got != (admin.Queue{Name: "q", LadderDelay: true}) {
		t.Errorf("QueueOf of a ladder-mode queue = %+v", got)
	}
	if got := admin.QueueOf(runtime.QueueConfig{Name: "q"}); got != (admin.Queue{Name: "q"}) {
		t.Errorf("QueueOf of a bare name = %+v", got)
	}
}
