package dashboard

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/queuey/queuey/admin"
	"github.com/queuey/queuey/runtime"
)

// limitsView is the overview's panel of global limits (limit, rate and
// limit_key): how far each limited queue's limits are taken and how many
// jobs wait for them, or why they could not be read.
type limitsView struct {
	Limits []limitRow
	Err    string
}

// limitRow is one limited queue's limits as the panel shows them: "-"
// for a limit the queue does not have.
type limitRow struct {
	Queue                        string
	Limit, InUse, Waiting        string
	Rate, RateReady, RateWaiting string
	KeysHeld, KeysWaiting        string
	Waits                        bool // a job waits for the limit, the rate or a key
}

// limitsPanel reads the global limits for the overview: of the configured
// queues when the overview shows only those, else of every limited queue
// the backend finds; nil when the backend holds none.
func (s *Server) limitsPanel(ctx context.Context) *limitsView {
	lr, ok := s.admin.(admin.LimitReader)
	if !ok {
		return nil
	}
	var queues []runtime.QueueConfig
	if s.opts.OnlyConfigured {
		if !slices.ContainsFunc(s.opts.Configs, runtime.QueueConfig.Limited) {
			return nil
		}
		queues = s.opts.Configs
	}
	ctx, cancel := context.WithTimeout(ctx, outboxTimeout)
	defer cancel()
	sts, err := lr.LimitStates(ctx, queues)
	if err != nil {
		s.opts.Logger.Error("queuey dashboard: read the global limits", "err", err)
		return &limitsView{Err: fmt.Sprintf("The global limits could not be read: %v", err)}
	}
	if len(sts) == 0 {
		return nil
	}
	v := &limitsView{}
	for _, st := range sts {
		var cfg *runtime.QueueConfig
		if i := slices.IndexFunc(s.opts.Configs, func(c runtime.QueueConfig) bool { return c.Name == st.Queue }); i >= 0 {
			cfg = &s.opts.Configs[i]
		}
		v.Limits = append(v.Limits, limitRowOf(st, cfg))
	}
	return v
}

// limitRowOf is st as the panel shows it. cfg, when known, says which
// limits the queue has; otherwise the state does.
func limitRowOf(st admin.LimitState, cfg *runtime.QueueConfig) limitRow {
	dash := "-"
	r := limitRow{Queue: st.Queue, Limit: dash, InUse: dash, Waiting: dash, Rate: dash, RateReady: dash, RateWaiting: dash}
	if (cfg != nil && cfg.Limit > 0) || st.Limit > 0 || st.InUse > 0 || st.Waiting > 0 {
		r.Limit, r.InUse, r.Waiting = strconv.Itoa(st.Limit), strconv.Itoa(st.InUse), strconv.Itoa(st.Waiting)
	}
	if (cfg != nil && !cfg.Rate.IsZero()) || !st.Rate.IsZero() || st.RateReady > 0 || st.RateWaiting > 0 {
		r.Rate = st.Rate.String()
		if st.Rate.Per == 0 {
			r.Rate = strconv.Itoa(st.Rate.N) + "/?"
		}
		r.RateReady, r.RateWaiting = strconv.Itoa(st.RateReady), strconv.Itoa(st.RateWaiting)
	}
	r.KeysHeld, r.KeysWaiting = dash, dash
	if cfg == nil || cfg.LimitKey != "" {
		r.KeysHeld, r.KeysWaiting = strconv.Itoa(st.KeysHeld), strconv.Itoa(st.KeysWaiting)
	}
	return r
}
