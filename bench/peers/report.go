package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/queuey/queuey/bench/e2e"
)

// row is a peer's results over its rounds.
type row struct {
	peer
	median, min, max   float64 // jobs/s
	clientUS, serverUS float64 // CPU µs per job, medians
}

func summarize(peers []peer, spans [][]e2e.Span) []row {
	rows := make([]row, len(peers))
	for i, p := range peers {
		rows[i] = row{
			peer:     p,
			median:   e2e.MedianOf(spans[i], e2e.Span.Rate),
			min:      minOf(spans[i], e2e.Span.Rate),
			max:      -minOf(spans[i], func(s e2e.Span) float64 { return -s.Rate() }),
			clientUS: e2e.MedianOf(spans[i], func(s e2e.Span) float64 { return s.PerJob(s.ClientCPU) }),
			serverUS: e2e.MedianOf(spans[i], func(s e2e.Span) float64 { return s.PerJob(s.ServerCPU) }),
		}
	}
	return rows
}

func values(spans []e2e.Span, f func(e2e.Span) float64) []float64 {
	v := make([]float64, len(spans))
	for i, s := range spans {
		v[i] = f(s)
	}
	slices.Sort(v)
	return v
}

func minOf(spans []e2e.Span, f func(e2e.Span) float64) float64 { return values(spans, f)[0] }

// printTable prints rows as a Markdown table, aligned for reading in a
// terminal too.
func printTable(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| peer\t settings\t median jobs/s\t min\t max\t client CPU µs/job\t server CPU µs/job\t")
	fmt.Fprintln(tw, "|---\t---\t---:\t---:\t---:\t---:\t---:\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "| %s\t %s\t %s\t %s\t %s\t %.0f\t %.0f\t\n",
			r.name, r.settings, thousands(r.median), thousands(r.min), thousands(r.max), r.clientUS, r.serverUS)
	}
	tw.Flush()
}

// thousands formats v rounded, with commas.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
