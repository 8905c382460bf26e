package rabbitmq

import (
	"strings"
	"testing"

	"github.com/queuey/queuey/runtime"
)

// TestRedeliveredMarkIsReserved: the header that marks a job published
// again after a redelivery is among the names producers refuse, so no
// application header can be taken for it.
func TestRedeliveredMarkIsReserved(t *testing.T) {
	if !strings.HasPrefix(headerRedelivered, runtime.ReservedHeaderPrefix) {
		t.Errorf("header %q does not start with runtime.ReservedHeaderPrefix %q: an application could set it", headerRedelivered, runtime.ReservedHeaderPrefix)
	}
}
