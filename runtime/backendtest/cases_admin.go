package backendtest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// admin returns the backend's admin capabilities or skips the test.
func (h *harness) admin() (admin.Inspector, admin.DeadLetterAdmin) {
	h.t.Helper()
	in, ok := h.b.(admin.Inspector)
	if !ok {
		h.t.Skip("backend does not implement admin.Inspector")
	}
	ad, ok := h.b.(admin.DeadLetterAdmin)
	if !ok {
		h.t.Skip("backend does not implement admin.DeadLetterAdmin")
	}
	return in, ad
}

// stats returns the queue's stats.
func (h *harness) stats() admin.QueueStats {
	h.t.Helper()
	in, _ := h.admin()
	st, err := in.QueueStats(ctxT(h.t), admin.QueueOf(h.q))
	if err != nil {
		h.t.Fatalf("QueueStats: %v", err)
	}
	if len(st) != 1 || st[0].Queue != h.q.Name {
		h.t.Fatalf("QueueStats = %+v, want one entry for %q", st, h.q.Name)
	}
	return st[0]
}

// eventually polls cond until it holds, failing after the suite's bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", wait, what)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, not a synchronisation
	}
}

// killJobs enqueues n jobs that fail for good, runs them one at a time so
// they die in order, and returns their IDs once all n are dead letters.
func (h *harness) killJobs(n int) []string {
	h.t.Helper()
	var ids []string
	for i := range n {
		ids = append(ids, h.enqueue(job{N: i, Text: "doomed"}))
	}
	stop := h.start(func(ctx context.Context, j job) error {
		return runtime.Permanent(errors.New("card declined"))
	})
	eventually(h.t, "every job dead", func() bool { return h.stats().Dead == n })
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		h.t.Fatalf("worker: %v", err)
	}
	return ids
}

// testAdminListKeeps: listing dead letters twice shows the same letters,
// oldest first, with the envelope and the decoded payload; pages chain;
// show finds one by ID; nothing is removed.
func testAdminListKeeps(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	in, _ := h.admin()
	ids := h.killJobs(3)
	for range 2 {
		l, err := in.DeadLetters(ctxT(t), h.q.Name, admin.DeadLetterPage{})
		if err != nil {
			t.Fatalf("DeadLetters: %v", err)
		}
		if got := l.IDs(); !slices.Equal(got, ids) || l.Total != 3 || l.Next != "" {
			t.Fatalf("DeadLetters = %v (total %d, next %q), want %v oldest first, total 3, no next page", got, l.Total, l.Next, ids)
		}
		d := l.Letters[1]
		if d.Queue != h.q.Name || d.Kind != h.q.Kind || d.Attempt != 1 || d.MaxAttempts != h.q.MaxAttempts || d.EnqueuedAt.IsZero() || d.Poison {
			t.Errorf("letter = %+v, want queue %q kind job attempt 1 of %d with an enqueue time", d, h.q.Name, h.q.MaxAttempts)
		}
		wantContains(t, d.Reason, "card declined", "reason")
		wantContains(t, d.LastError, "card declined", "last error")
		var payload map[string]any
		if err := json.Unmarshal(d.Payload, &payload); err != nil || payload["N"] != float64(1) || payload["Text"] != "doomed" {
			t.Errorf("payload = %s (%v), want {\"N\":1,\"Text\":\"doomed\"}", d.Payload, err)
		}
	}
	p1, err := in.DeadLetters(ctxT(t), h.q.Name, admin.DeadLetterPage{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := in.DeadLetters(ctxT(t), h.q.Name, admin.DeadLetterPage{After: p1.Next, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := append(p1.IDs(), p2.IDs()...); !slices.Equal(got, ids) || p1.Next == "" || p2.Next != "" {
		t.Errorf("pages %v (next %q) + %v (next %q), want %v", p1.IDs(), p1.Next, p2.IDs(), p2.Next, ids)
	}
	one, err := in.DeadLetter(ctxT(t), h.q.Name, ids[2])
	if err != nil || one.ID != ids[2] {
		t.Errorf("DeadLetter(%s) = %+v, %v", ids[2], one, err)
	}
	_, err = in.DeadLetter(ctxT(t), h.q.Name, "no-such-id")
	wantErrIs(t, err, admin.ErrDeadLetterNotFound, "DeadLetter of an unknown ID")
	// A quorum queue takes back what a reader held asynchronously, so the
	// count may lag the read for a moment.
	eventually(t, "all 3 dead letters kept after listing", func() bool { return h.stats().Dead == 3 })
}

// handled runs a worker that reports each job's info.
func (h *harness) handled() <-chan runtime.Info {
	infos := make(chan runtime.Info, 100)
	h.start(func(ctx context.Context, j job) error {
		info, _ := runtime.InfoFromContext(ctx)
		infos <- info
		return nil
	})
	return infos
}

// testAdminRedriveByID: re-driving one ID moves exactly that job, which is
// handled on a fresh attempt with the re-drive in its headers.
func testAdminRedriveByID(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	in, ad := h.admin()
	ids := h.killJobs(3)
	res, err := ad.RedriveDeadLetters(ctxT(t), h.q.Name, admin.DeadLetterSelector{IDs: []string{ids[1], "no-such-id"}}, nil)
	if err != nil {
		t.Fatalf("RedriveDeadLetters: %v", err)
	}
	if !slices.Equal(res.Moved, ids[1:2]) || !slices.Equal(res.NotFound, []string{"no-such-id"}) || len(res.Refused) != 0 {
		t.Fatalf("re-drive = %+v, want %s moved and no-such-id not found", res, ids[1])
	}
	info := recv(t, h.handled(), "the re-driven job")
	if info.ID != ids[1] || info.Attempt != 1 || info.Headers[admin.HeaderRedrives] != "1" || info.Headers[admin.HeaderRedrivenAt] == "" {
		t.Errorf("handled %+v, want job %s on attempt 1 with the re-drive headers", info, ids[1])
	}
	l, err := in.DeadLetters(ctxT(t), h.q.Name, admin.DeadLetterPage{})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.IDs(); !slices.Equal(got, []string{ids[0], ids[2]}) {
		t.Errorf("left %v, want %v", got, []string{ids[0], ids[2]})
	}
	_, err = ad.RedriveDeadLetters(ctxT(t), h.q.Name, admin.DeadLetterSelector{}, nil)
	wantErrIs(t, err, admin.ErrEmptySelector, "re-drive with an empty selector")
}

// testAdminRedriveAll: re-driving everything empties the dead letters and
// every job is handled.
func testAdminRedriveAll(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	_, ad := h.admin()
	ids := h.killJobs(5)
	var last admin.RedriveProgress
	res, err := ad.RedriveDeadLetters(ctxT(t), h.q.Name, admin.DeadLetterSelector{All: true}, func(p admin.RedriveProgress) { last = p })
	if err != nil {
		t.Fatalf("RedriveDeadLetters: %v", err)
	}
	if len(res.Moved) != 5 || last.Moved != 5 || last.Total != 5 {
		t.Fatalf("re-drive = %+v, last progress %+v; want 5 moved of 5", res, last)
	}
	infos := h.handled()
	got := map[string]bool{}
	for range ids {
		got[recv(t, infos, "a re-driven job").ID] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("job %s not handled after the re-drive", id)
		}
	}
	if st := h.stats(); st.Dead != 0 {
		t.Errorf("%d dead letters left, want none", st.Dead)
	}
}

// testAdminRedriveInterrupted: a re-drive whose context ends midway loses
// nothing: each job is either moved (and handled) or still dead.
func testAdminRedriveInterrupted(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	in, ad := h.admin()
	ids := h.killJobs(10)
	ctx, cancel := context.WithCancel(ctxT(t))
	res, err := ad.RedriveDeadLetters(ctx, h.q.Name, admin.DeadLetterSelector{All: true}, func(p admin.RedriveProgress) {
		if p.Moved == 3 {
			cancel()
		}
	})
	wantErrIs(t, err, context.Canceled, "interrupted re-drive")
	if len(res.Moved) < 3 || len(res.Moved) >= 10 {
		t.Fatalf("moved %d before stopping, want 3 up to 9", len(res.Moved))
	}
	l, err := in.DeadLetters(ctxT(t), h.q.Name, admin.DeadLetterPage{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	left := l.IDs()
	if len(left)+len(res.Moved) != 10 {
		t.Fatalf("%d moved + %d still dead, want 10", len(res.Moved), len(left))
	}
	infos := h.handled()
	handled := map[string]bool{}
	for range res.Moved {
		handled[recv(t, infos, "a moved job").ID] = true
	}
	for _, id := range ids {
		if !handled[id] && !slices.Contains(left, id) {
			t.Errorf("job %s lost: neither handled nor dead", id)
		}
	}
}

// testAdminPoison: a poison letter is listed with its raw body and reason,
// and a re-drive refuses it with a reason and keeps it.
func testAdminPoison(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, nil)
	in, ad := h.admin()
	h.publishRaw([]byte("not an envelope"))
	stop := h.start(func(ctx context.Context, j job) error { return nil })
	eventually(t, "the poison letter dead", func() bool { return h.stats().Dead == 1 })
	_ = stop()
	l, err := in.DeadLetters(ctxT(t), h.q.Name, admin.DeadLetterPage{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Letters) != 1 || !l.Letters[0].Poison || string(l.Letters[0].Body) != "not an envelope" || l.Letters[0].ID == "" {
		t.Fatalf("letters = %+v, want one poison letter with its body and an ID", l.Letters)
	}
	wantContains(t, l.Letters[0].Reason, "not a valid envelope", "poison reason")
	id := l.Letters[0].ID
	if one, err := in.DeadLetter(ctxT(t), h.q.Name, id); err != nil || !one.Poison {
		t.Errorf("DeadLetter(%s) = %+v, %v; want the poison letter", id, one, err)
	}
	res, err := ad.RedriveDeadLetters(ctxT(t), h.q.Name, admin.DeadLetterSelector{All: true}, nil)
	if err != nil {
		t.Fatalf("RedriveDeadLetters: %v", err)
	}
	if len(res.Moved) != 0 || len(res.Refused) != 1 || res.Refused[0].ID != id {
		t.Fatalf("re-drive = %+v, want the poison letter refused", res)
	}
	wantContains(t, res.Refused[0].Reason, "poison", "refusal")
	// The refused letter goes back to the dead-letter queue as the re-drive
	// lets it go; a quorum queue counts it again only once its log has
	// applied the return, a moment after the re-drive returned.
	eventually(t, "the poison letter kept after the refused re-drive", func() bool { return h.stats().Dead == 1 })
	if pr, err := ad.PurgeDeadLetters(ctxT(t), h.q.Name, admin.DeadLetterSelector{IDs: []string{id}}); err != nil || pr.Purged != 1 {
		t.Errorf("purge of the poison letter = %+v, %v; want 1 purged", pr, err)
	}
}

// testAdminPurge: a purge by ID removes that letter, a purge of all the
// rest, and each says how many.
func testAdminPurge(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.Prefetch, q.Concurrency = 1, 1 })
	in, ad := h.admin()
	ids := h.killJobs(4)
	res, err := ad.PurgeDeadLetters(ctxT(t), h.q.Name, admin.DeadLetterSelector{IDs: []string{ids[2], "no-such-id"}})
	if err != nil || res.Purged != 1 || !slices.Equal(res.NotFound, []string{"no-such-id"}) {
		t.Fatalf("purge by ID = %+v, %v; want 1 purged and no-such-id not found", res, err)
	}
	l, err := in.DeadLetters(ctxT(t), h.q.Name, admin.DeadLetterPage{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.IDs(), []string{ids[0], ids[1], ids[3]}; !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
	res, err = ad.PurgeDeadLetters(ctxT(t), h.q.Name, admin.DeadLetterSelector{All: true})
	if err != nil || res.Purged != 3 {
		t.Fatalf("purge all = %+v, %v; want 3 purged", res, err)
	}
	if st := h.stats(); st.Dead != 0 {
		t.Errorf("%d dead letters after purging all, want none", st.Dead)
	}
}

// testAdminStats: stats count ready jobs and jobs waiting for a retry, with
// when the wait ends at the latest; an unknown queue is an error.
func testAdminStats(t *testing.T, f Features, nb func(*testing.T) runtime.Backend) {
	h := newHarness(t, f, nb, func(q *runtime.QueueConfig) { q.RetryBase, q.RetryMax = time.Minute, time.Minute })
	in, _ := h.admin()
	h.enqueue(job{N: 1})
	ran := make(chan struct{}, 1)
	stop := h.start(func(ctx context.Context, j job) error {
		ran <- struct{}{}
		return errors.New("try again later")
	})
	recv(t, ran, "the first run")
	_ = stop()
	before := time.Now()
	eventually(t, "the job waiting for its retry", func() bool { return h.stats().Waiting == 1 })
	st := h.stats()
	if st.Ready != 0 || st.Dead != 0 || len(st.Holds) != 1 {
		t.Fatalf("stats = %+v, want nothing ready or dead and one hold", st)
	}
	hold := st.Holds[0]
	// A backend may hold a wait longer than asked (quorum hold queues
	// round up to a ladder: at most a quarter and a second more), never
	// shorter. A backend whose holds have no one delay reports none.
	delay := cmp.Or(hold.Delay, time.Minute)
	if hold.Kind != admin.HoldRetry || hold.Jobs != 1 || delay < time.Minute || delay > time.Minute*5/4+time.Second ||
		hold.NextReleaseBy.Before(before) || hold.NextReleaseBy.After(time.Now().Add(delay+time.Second)) {
		t.Errorf("hold = %+v, want one retry held for a minute (up to a quarter more), due within that", hold)
	}
	for i := range 3 {
		h.enqueue(job{N: 10 + i})
	}
	eventually(t, "three jobs ready", func() bool { return h.stats().Ready == 3 })
	if st := h.stats(); st.Consumers != 0 || st.Unacked != 0 && st.Unacked != admin.NotSeen {
		t.Errorf("stats = %+v, want no consumers and nothing in flight", st)
	}
	_, err := in.QueueStats(ctxT(t), admin.Queue{Name: h.q.Name + ".missing"})
	wantErrIs(t, err, runtime.ErrUnknownQueue, "stats of a missing queue")
	names, err := in.Queues(ctxT(t))
	if err != nil && !errors.Is(err, admin.ErrCannotList) {
		t.Fatalf("Queues: %v", err)
	}
	if !slices.Contains(names, h.q.Name) {
		t.Errorf("Queues = %v, want it to contain %q", names, h.q.Name)
	}
}
