package rabbitmq

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queuey/queuey/runtime"
)

func TestOptionsZeroIsDefault(t *testing.T) {
	o, err := Options{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.RetrySuffix != ".retry" || o.DeferredSuffix != ".deferred" || o.DeadSuffix != ".dead" {
		t.Errorf("suffixes = %q %q %q", o.RetrySuffix, o.DeferredSuffix, o.DeadSuffix)
	}
	if o.Granularity != time.Second || o.Delay != "" || o.Logger == nil || o.PublishChannels != DefaultPublishChannels || o.NoDeadLetterQueues {
		t.Errorf("defaults = %+v", o)
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{RetrySuffix: "/x"}, "RetrySuffix"},
		{Options{DeadSuffix: ".retry"}, "must differ"},
		{Options{DeadSuffix: ".retry.1000"}, `rabbitmq.Options.DeadSuffix = ".retry.1000" names dead-letter queues as RetrySuffix ".retry" names the retry hold queue of a 1000 ms wait ("<q>.retry.1000")`},
		{Options{DeferredSuffix: ".later", DeadSuffix: ".later.60000"}, `DeferredSuffix ".later" names the deferral hold queue of a 60000 ms wait`},
		{Options{DelayExchange: "queuey.control"}, "pause and resume notices"},
		{Options{Granularity: time.Microsecond}, "Granularity"},
		{Options{Granularity: 1500 * time.Microsecond}, "whole number of milliseconds"},
		{Options{Delay: "later"}, "Delay"},
		{Options{DelayExchange: "a/b"}, "DelayExchange"},
		{Options{PublishChannels: 65}, "PublishChannels"},
		{Options{MaxMessageSize: -1}, "MaxMessageSize"},
		{Options{MaxMessageSize: runtime.MaxJobSize + 1}, "MaxMessageSize"},
	} {
		_, err := tc.o.withDefaults()
		if !errors.Is(err, runtime.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want ErrInvalidOption naming %s", tc.o, err, tc.want)
		}
	}
}

// TestOptionsSuffixesThatCannotCollide: suffixes that share a start with a
// hold queue's but cannot be a hold queue's name are accepted.
func TestOptionsSuffixesThatCannotCollide(t *testing.T) {
	for _, o := range []Options{
		{DeadSuffix: ".retry.dead"},
		{DeadSuffix: ".retry.1000x"},
		{DeadSuffix: ".retry."},
		{RetrySuffix: ".r", DeferredSuffix: ".r.1"},
	} {
		if _, err := o.withDefaults(); err != nil {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestDefaultDelayByQueueType: with no delay mode in the queue or the
// options, a classic queue's waits go to hold queues and a quorum queue's
// to the ladder; a mode named by the queue, or else by the options, wins.
func TestDefaultDelayByQueueType(t *testing.T) {
	classic := runtime.QueueConfig{Name: "c", QueueType: runtime.QueueClassic}
	quorum := runtime.QueueConfig{Name: "q", QueueType: runtime.QueueQuorum}
	rungs := quorum
	rungs.Delay = runtime.DelayQueue
	for _, c := range []struct {
		mode runtime.DelayMode // Options.Delay
		q    runtime.QueueConfig
		want any
	}{
		{"", classic, queueDelayer{}},
		{"", quorum, ladderDelayer{}},
		{"", rungs, queueDelayer{}},
		{runtime.DelayQueue, quorum, queueDelayer{}},
		{runtime.DelayLadder, classic, ladderDelayer{}},
		{runtime.DelayQueue, runtime.QueueConfig{Name: "l", QueueType: runtime.QueueQuorum, Delay: runtime.DelayLadder}, ladderDelayer{}},
	} {
		w := newWaiter(&waiter{mode: c.mode})
		d, err := w.delayer(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%T", d) != fmt.Sprintf("%T", c.want) {
			t.Errorf("Options.Delay %q, %s queue with Delay %q: %T, want %T", c.mode, c.q.QueueType, c.q.Delay, d, c.want)
		}
	}
}
