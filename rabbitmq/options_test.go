package rabbitmq

import (
	"errors"
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
	if o.Granularity != time.Second || o.Delay != runtime.DelayQueue || o.Logger == nil || o.PublishChannels != DefaultPublishChannels || o.NoDeadLetterQueues {
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
