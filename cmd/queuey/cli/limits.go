package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// limitJSON is the state of one queue's global limits (limit, rate and
// limit_key), as queuey --json queues prints it. The fields of a limit
// the queue does not have are null.
type limitJSON struct {
	Queue string `json:"queue"`
	// Limit is the count of the Limit's tokens the backend holds (jobs
	// that may run at once); InUse of them are held by running jobs, and
	// Waiting jobs wait for one.
	Limit   *int `json:"limit"`
	InUse   *int `json:"in_use"`
	Waiting *int `json:"waiting"`
	// Rate is the rate the backend holds, as the annotation writes it
	// (50/s), with "?" for a period it cannot tell; RateReady starts it
	// allows now, RateWaiting jobs wait for one.
	Rate        *string `json:"rate"`
	RateReady   *int    `json:"rate_ready"`
	RateWaiting *int    `json:"rate_waiting"`
	// KeysHeld limit keys have a running job; KeysWaiting jobs wait for
	// their key.
	KeysHeld    *int `json:"keys_held"`
	KeysWaiting *int `json:"keys_waiting"`
}

// limitOf is st as queuey queues shows it. cfg, when known, says which
// limits the queue has; otherwise the state does.
func limitOf(st admin.LimitState, cfg *runtime.QueueConfig) limitJSON {
	out := limitJSON{Queue: st.Queue}
	if (cfg != nil && cfg.Limit > 0) || st.Limit > 0 || st.InUse > 0 || st.Waiting > 0 {
		out.Limit, out.InUse, out.Waiting = &st.Limit, &st.InUse, &st.Waiting
	}
	if (cfg != nil && !cfg.Rate.IsZero()) || !st.Rate.IsZero() || st.RateReady > 0 || st.RateWaiting > 0 {
		r := st.Rate.String()
		if st.Rate.Per == 0 {
			r = strconv.Itoa(st.Rate.N) + "/?"
		}
		out.Rate, out.RateReady, out.RateWaiting = &r, &st.RateReady, &st.RateWaiting
	}
	if cfg == nil || cfg.LimitKey != "" {
		out.KeysHeld, out.KeysWaiting = &st.KeysHeld, &st.KeysWaiting
	}
	return out
}

// queueLimits reads the global limits of the queues of rows: of the
// annotated queues that have any when annotations are given, else of
// every queue whose limits the backend finds. A backend that holds no
// limits shows none; one that cannot read them says why in a note.
func (r *run) queueLimits(be Admin, annotated []runtime.QueueConfig, rows []queueJSON) ([]limitJSON, []string, error) {
	lr, ok := be.(admin.LimitReader)
	if !ok {
		return []limitJSON{}, nil, nil
	}
	if annotated != nil && !slices.ContainsFunc(annotated, runtime.QueueConfig.Limited) {
		return []limitJSON{}, nil, nil
	}
	sts, err := lr.LimitStates(r.ctx, annotated)
	if errors.Is(err, admin.ErrCannotList) {
		return []limitJSON{}, []string{"global limits could not be read: " + cannotList(err)}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("global limits: %w", err)
	}
	shown := map[string]bool{}
	for _, q := range rows {
		shown[q.Queue] = true
	}
	out := []limitJSON{}
	for _, st := range sts {
		if !shown[st.Queue] {
			continue
		}
		var cfg *runtime.QueueConfig
		if i := slices.IndexFunc(annotated, func(c runtime.QueueConfig) bool { return c.Name == st.Queue }); i >= 0 {
			cfg = &annotated[i]
		}
		out = append(out, limitOf(st, cfg))
	}
	return out, nil, nil
}

// limitsHeaders are the columns of the global limits table: the JSON
// fields, in capitals.
var limitsHeaders = []string{"QUEUE", "LIMIT", "IN_USE", "WAITING", "RATE", "RATE_READY", "RATE_WAITING", "KEYS_HELD", "KEYS_WAITING"}

// limitsTable prints the global limits of queuey queues, under a title.
func (r *run) limitsTable(ls []limitJSON) {
	if len(ls) == 0 {
		return
	}
	n := func(c *int) string {
		if c == nil {
			return "-"
		}
		return strconv.Itoa(*c)
	}
	cells := make([][]string, 0, len(ls))
	for _, l := range ls {
		rate := "-"
		if l.Rate != nil {
			rate = *l.Rate
		}
		cells = append(cells, []string{l.Queue, n(l.Limit), n(l.InUse), n(l.Waiting), rate, n(l.RateReady), n(l.RateWaiting), n(l.KeysHeld), n(l.KeysWaiting)})
	}
	fmt.Fprintln(r.env.Stdout, "\nglobal limits (limit, rate, limit_key):")
	table(r.env.Stdout, limitsHeaders, cells)
}
