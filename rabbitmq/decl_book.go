package rabbitmq

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	"github.com/queuey/queuey/internal/rules/errs"
	"github.com/queuey/queuey/runtime"
)

// queueBook is what this backend knows of queues' configs: those declared
// through it, and those it was told of for waits onto them
// (runtime.WaitTargeter). Declaring, consuming, waiting and dead-lettering
// read it.
type queueBook struct {
	mu       sync.RWMutex
	declared map[string]runtime.QueueConfig
	targets  map[string]runtime.QueueConfig
}

func newQueueBook() *queueBook {
	return &queueBook{declared: map[string]runtime.QueueConfig{}, targets: map[string]runtime.QueueConfig{}}
}

// record keeps q, declared through this backend. A queue declared before
// for jobs of another kind is errs.KindConflict; a kind left empty
// keeps the one declared before.
func (k *queueBook) record(q runtime.QueueConfig) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old, ok := k.declared[q.Name]; ok {
		if err := errs.KindConflict(q.Name, old.Kind, q.Kind); err != nil {
			return err
		}
		q.Kind = cmp.Or(q.Kind, old.Kind)
	}
	k.declared[q.Name] = q
	return nil
}

// target keeps q, which waits may go onto without this backend declaring
// it.
func (k *queueBook) target(q runtime.QueueConfig) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.targets[q.Name] = q
}

// names returns the names of the queues declared through this backend.
func (k *queueBook) names() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return slices.Collect(maps.Keys(k.declared))
}

// all returns the configs of every queue this backend knows: declared
// through it or told to it for waits.
func (k *queueBook) all() []runtime.QueueConfig {
	k.mu.RLock()
	defer k.mu.RUnlock()
	qs := slices.Collect(maps.Values(k.declared))
	for name, q := range k.targets {
		if _, ok := k.declared[name]; !ok {
			qs = append(qs, q)
		}
	}
	return qs
}

// config returns the config q was declared with through this backend.
func (k *queueBook) config(name string) (runtime.QueueConfig, error) {
	k.mu.RLock()
	q, ok := k.declared[name]
	k.mu.RUnlock()
	if !ok {
		return q, errs.Unknown(name, "was not declared through this backend in this process (a wait needs that, to declare its hold queue)")
	}
	return q, nil
}

// waitTarget returns the config of queue for a wait onto it: as declared
// through this backend, or as given to TargetWaits.
func (k *queueBook) waitTarget(name string) (runtime.QueueConfig, error) {
	k.mu.RLock()
	q, ok := k.declared[name]
	if !ok {
		q, ok = k.targets[name]
	}
	k.mu.RUnlock()
	if !ok {
		return q, errs.Unknown(name, "was neither declared through this backend nor told to it (runtime.WaitTargeter): a wait needs the queue's config")
	}
	return q, nil
}
