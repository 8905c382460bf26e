package runtime

import (
	"maps"
	"strconv"
	"time"

	"github.com/queuey/queuey/internal/adminapi"
)

// RedriveEnvelope returns the envelope that re-drives dead job e onto
// queue at now: attempt 1, the re-drive counted and timed in its headers,
// everything else as it was.
func RedriveEnvelope(e *Envelope, queue string, now time.Time) *Envelope {
	n := e.Clone()
	n.Queue = queue
	n.Attempt = 1
	n.Headers = maps.Clone(e.Headers)
	if n.Headers == nil {
		n.Headers = map[string]string{}
	}
	count, _ := strconv.Atoi(n.Headers[adminapi.HeaderRedrives])
	n.Headers[adminapi.HeaderRedrives] = strconv.Itoa(count + 1)
	n.Headers[adminapi.HeaderRedrivenAt] = now.UTC().Format(time.RFC3339Nano)
	return n
}
