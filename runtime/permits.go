package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// A worker takes a permit of its backend's Limiter before each run of a
// limited queue's job (one with a Limit, a Rate or a LimitKey), and gives
// it back when the run returns, before the job is settled. The wait comes
// after the delivery is taken and before the run begins: it is outside the
// run's Timeout and counts no attempt, and the job keeps its delivery, so
// its priority, meanwhile. It holds one of its own queue's handler slots,
// never another queue's. When the worker stops, the queue pauses or its
// subscription ends during the wait, the wait ends and the job goes back
// to its queue unrun (Delivery.Release).

// limiterFor returns the Limiter that holds q's global limits, nil when q
// has none, or an error when q has some and w's backend holds none.
func (w *Worker) limiterFor(q QueueConfig) (Limiter, error) {
	if !q.Limited() {
		return nil, nil
	}
	l, ok := w.backend.(Limiter)
	if !ok {
		return nil, fmt.Errorf("%w: queue %q has global limits (%s), and the backend (%T) cannot hold them: it does not implement runtime.Limiter", ErrInvalidOption, q.Name, describeLimits(q), w.backend)
	}
	return l, nil
}

// describeLimits writes q's limits as its annotation does.
func describeLimits(q QueueConfig) string {
	var s []byte
	add := func(k, v string) {
		if len(s) > 0 {
			s = append(s, ' ')
		}
		s = append(s, k+"="+v...)
	}
	if q.Limit > 0 {
		add("limit", strconv.Itoa(q.Limit))
	}
	if !q.Rate.IsZero() {
		add("rate", q.Rate.String())
	}
	if q.LimitKey != "" {
		add("limit_key", q.LimitKey)
	}
	return string(s)
}

// keyReader returns the function that reads the limit key of a job of T,
// whose field q.LimitKey names, from its payload; nil when q has no
// LimitKey; an error when T has no such field of a kind a key can be.
// The function reports false for a payload that does not decode: such a
// job's run dead-letters it without taking a key.
func keyReader[T any](q QueueConfig, decode func([]byte) (*T, func(), error)) (func([]byte) (string, bool), error) {
	if q.LimitKey == "" {
		return nil, nil
	}
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: queue %q: LimitKey %q: the job type %v is not a struct", ErrInvalidConfig, q.Name, q.LimitKey, t)
	}
	f, ok := t.FieldByName(q.LimitKey)
	if !ok || len(f.Index) != 1 || !f.IsExported() {
		return nil, fmt.Errorf("%w: queue %q: LimitKey %q: %v has no exported field of that name", ErrInvalidConfig, q.Name, q.LimitKey, t)
	}
	if keyFormat(f.Type.Kind()) == nil {
		return nil, fmt.Errorf("%w: queue %q: LimitKey %q: field %v.%s is a %v, want a string, integer or bool", ErrInvalidConfig, q.Name, q.LimitKey, t, f.Name, f.Type)
	}
	format := keyFormat(f.Type.Kind())
	i := f.Index[0]
	return func(payload []byte) (string, bool) {
		job, done, err := decode(payload)
		defer done()
		if err != nil {
			return "", false
		}
		return format(reflect.ValueOf(job).Elem().Field(i)), true
	}, nil
}

// keyFormat returns how a limit key of kind k is written, nil for a kind
// a key cannot be.
func keyFormat(k reflect.Kind) func(reflect.Value) string {
	switch k {
	case reflect.String:
		return reflect.Value.String
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(v reflect.Value) string { return strconv.FormatInt(v.Int(), 10) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(v reflect.Value) string { return strconv.FormatUint(v.Uint(), 10) }
	case reflect.Bool:
		return func(v reflect.Value) string { return strconv.FormatBool(v.Bool()) }
	}
	return nil
}

// DefaultPermitWait is how long a job waits for its permit, holding its
// delivery, before it goes back to its queue unrun (Delivery.Release) to
// be delivered again: well within RabbitMQ's consumer_timeout (30 minutes
// by default), past which the broker would close the consumer's channel
// and deliver its jobs again, each counted as an attempt.
const DefaultPermitWait = 10 * time.Minute

// Waits after a Limiter failed, before it is asked again: doubling from
// permitRetryMin to permitRetryMax.
const (
	permitRetryMin = 100 * time.Millisecond
	permitRetryMax = 5 * time.Second
)

// permit waits for the permit d's job needs to run, and returns it (nil
// for a queue without limits, or for a job whose run still goes on here,
// which its run settles without running it again) and true; or false
// when the wait ended first (the worker stops, the queue pauses, the
// subscription ended or the backend closed), having kept d to go back
// unrun, or when it lasted the worker's permit wait, having released d.
func (h *handlers) permit(d Delivery) (Permit, bool) {
	c := h.c
	if c.limiter == nil || c.orphans.has(d.Envelope()) {
		return nil, true
	}
	ctx, cancel := context.WithTimeout(h.waitCtx, c.w.permitWait)
	defer cancel()
	key := ""
	if c.keyOf != nil {
		k, ok := c.keyOf(d.Envelope().Payload)
		if !ok {
			return nil, true // it does not decode: its run dead-letters it
		}
		key = k
	}
	wait := permitRetryMin
	for {
		p, err := c.limiter.AcquirePermit(ctx, c.queue, key)
		switch {
		case err == nil:
			return p, true
		case ctx.Err() != nil, errors.Is(err, ErrClosed):
			h.endPermitWait(d, errors.Is(err, ErrClosed))
			return nil, false
		}
		if wait == permitRetryMin {
			c.w.log.Warn("queuey: could not take a permit of the queue's global limits; the job waits and asks again", "queue", c.queue.Name, "job_id", d.Envelope().ID, "error", err)
		} else {
			c.w.log.Debug("queuey: could not take a permit of the queue's global limits; the job waits and asks again", "queue", c.queue.Name, "job_id", d.Envelope().ID, "error", err, "after", wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			h.endPermitWait(d, false)
			return nil, false
		case <-t.C:
		}
		wait = min(2*wait, permitRetryMax)
	}
}

// endPermitWait gives d back, its wait for a permit over unrun: kept for
// the stop to release when the worker stops, the queue pauses, the
// subscription ended or the backend closed; released at once when it
// waited the worker's longest.
func (h *handlers) endPermitWait(d Delivery, closed bool) {
	c := h.c
	if closed || h.waitCtx.Err() != nil {
		h.keep(d)
		return
	}
	c.w.log.Info("queuey: a job waited its longest for a permit of the queue's global limits; it goes back to the queue unrun", "queue", c.queue.Name, "job_id", d.Envelope().ID, "waited", c.w.permitWait)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.waitCtx), releaseTimeout)
	defer cancel()
	h.release(ctx, d)
}

// releaser returns a function that releases p (when not nil) the first
// time it is called.
func releaser(p Permit) func() {
	return func() {
		if p != nil {
			p.Release()
			p = nil
		}
	}
}
