package adminq_test

import (
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/internal/adminq"
	"github.com/queuey/queuey/runtime"
)

func TestOf(t *testing.T) {
	t.Parallel()
	q := runtime.QueueConfig{Name: "q", MaxAttempts: 3, RetryBase: time.Second, RetryMax: time.Minute, QueueType: runtime.QueueQuorum, Delay: runtime.DelayPlugin, Prefetch: 7}
	want := admin.Queue{Name: "q", MaxAttempts: 3, RetryBase: time.Second, RetryMax: time.Minute, Quorum: true, PluginDelay: true}
	if got := adminq.Of(q); got != want {
		t.Errorf("Of = %+v, want %+v", got, want)
	}
	if got := adminq.Of(runtime.QueueConfig{Name: "q"}); got != (admin.Queue{Name: "q"}) {
		t.Errorf("Of of a bare name = %+v", got)
	}
}
