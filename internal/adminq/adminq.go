// Package adminq turns a queue's configuration into what an admin.Inspector
// asks for it by: the one conversion the queuey command, the dashboard and
// the conformance suite share.
package adminq

import (
	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// Of returns the admin.Queue of q: its name, retry schedule, type and
// delay mode, as QueueStats takes them.
func Of(q runtime.QueueConfig) admin.Queue {
	return admin.Queue{
		Name:        q.Name,
		MaxAttempts: q.MaxAttempts,
		RetryBase:   q.RetryBase,
		RetryMax:    q.RetryMax,
		Quorum:      q.QueueType == runtime.QueueQuorum,
		PluginDelay: q.Delay == runtime.DelayPlugin,
	}
}
