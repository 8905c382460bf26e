package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// A chart is drawn on the server as inline SVG: axes with their units, the
// time range of the last ten minutes, and one line per series.

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 640, 190
	plotL, plotR   = 58, 628
	plotT, plotB   = 12, 160
	timeTicks      = 5 // intervals on the time axis
	valueTicks     = 4 // intervals on the value axis
)

// series is one line of a chart.
type series struct {
	Name  string // in the legend
	Class string // CSS class of the line
	Value func(point) float64
}

var (
	depthSeries = []series{
		{Name: "depth (ready + unacked + waiting)", Class: "depth", Value: func(p point) float64 { return float64(p.Depth) }},
		{Name: "dead", Class: "dead", Value: func(p point) float64 { return float64(p.Dead) }},
	}
	rateSeries = []series{
		{Name: "published", Class: "published", Value: func(p point) float64 { return p.Published }},
		{Name: "handled", Class: "handled", Value: func(p point) float64 { return p.Handled }},
	}
)

// charts are the two charts of a page, rendered.
type charts struct {
	Depth template.HTML `json:"depth"`
	Rate  template.HTML `json:"rate"`
	// Rates is set when some sample has measured rates.
	Rates bool `json:"rates"`
	// DepthNow and the others say the latest values in words.
	DepthNow string `json:"depth_now"`
	RateNow  string `json:"rate_now"`
	// Src is where the page refreshes them; Who says whose they are
	// when not all queues'.
	Src string `json:"-"`
	Who string `json:"-"`
}

// drawCharts renders the depth and throughput charts of samples, ending at
// now.
func drawCharts(samples []sample, now time.Time) charts {
	var c charts
	rated := samples[:0:0]
	for _, s := range samples {
		if s.Rates {
			rated = append(rated, s)
		}
	}
	c.Rates = len(rated) > 0
	c.Depth = drawChart("depth-chart", "jobs", "no samples yet", samples, depthSeries, now, false)
	c.Rate = drawChart("rate-chart", "jobs/s", "no rates measured", rated, rateSeries, now, true)
	if n := len(samples); n > 0 {
		last := samples[n-1]
		c.DepthNow = fmt.Sprintf("now %d not yet done, %d dead", last.Depth, last.Dead)
	}
	if n := len(rated); n > 0 {
		last := rated[n-1]
		c.RateNow = fmt.Sprintf("now %s published, %s handled jobs/s", rateText(last.Published), rateText(last.Handled))
	}
	return c
}

// drawChart renders one chart of samples as SVG with id, saying empty
// when there are none.
func drawChart(id, unit, empty string, samples []sample, ss []series, now time.Time, fractions bool) template.HTML {
	from := now.Add(-historySpan)
	top := 0.0
	for _, s := range samples {
		for _, se := range ss {
			top = max(top, se.Value(s.point))
		}
	}
	top = niceCeil(top, fractions)
	x := func(t time.Time) float64 {
		f := float64(t.Sub(from)) / float64(historySpan)
		return plotL + min(max(f, 0), 1)*(plotR-plotL)
	}
	y := func(v float64) float64 { return plotB - v/top*(plotB-plotT) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s over the last 10 minutes" data-points="%d" data-max="%s" data-from="%s" data-to="%s">`,
		id, chartW, chartH, unit, len(samples), num(top), from.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	// Value axis: grid lines and labels, and the unit.
	for i := 0; i <= valueTicks; i++ {
		v := top * float64(i) / valueTicks
		yy := y(v)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, plotL, plotR, yy, yy)
		fmt.Fprintf(&b, `<text class="tick" x="%d" y="%.1f" text-anchor="end">%s</text>`, plotL-6, yy+4, num(v))
	}
	fmt.Fprintf(&b, `<text class="unit" x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">%s</text>`, (plotT+plotB)/2, (plotT+plotB)/2, unit)
	// Time axis: minutes before now, and the clock times of both ends.
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, plotL, plotR, plotB, plotB)
	fmt.Fprintf(&b, `<line class="axis" x1="%d" x2="%d" y1="%d" y2="%d"/>`, plotL, plotL, plotT, plotB)
	for i := 0; i <= timeTicks; i++ {
		t := from.Add(historySpan * time.Duration(i) / timeTicks)
		xx := x(t)
		label := fmt.Sprintf("−%d min", int((historySpan-historySpan*time.Duration(i)/timeTicks)/time.Minute))
		if i == timeTicks {
			label = "now"
		}
		fmt.Fprintf(&b, `<line class="axis" x1="%.1f" x2="%.1f" y1="%d" y2="%d"/>`, xx, xx, plotB, plotB+4)
		fmt.Fprintf(&b, `<text class="tick" x="%.1f" y="%d" text-anchor="middle">%s</text>`, xx, plotB+16, label)
	}
	fmt.Fprintf(&b, `<text class="range" x="%d" y="%d">%s</text>`, plotL, chartH-4, from.UTC().Format("15:04:05"))
	fmt.Fprintf(&b, `<text class="range" x="%d" y="%d" text-anchor="end">%s UTC</text>`, plotR, chartH-4, now.UTC().Format("15:04:05"))
	if len(samples) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d" text-anchor="middle">%s</text>`, (plotL+plotR)/2, (plotT+plotB)/2, empty)
	}
	for _, se := range ss {
		pts := make([]string, len(samples))
		for i, s := range samples {
			pts[i] = fmt.Sprintf("%.1f,%.1f", x(s.At), y(se.Value(s.point)))
		}
		if len(pts) == 1 {
			fmt.Fprintf(&b, `<circle class="%s" cx="%s" r="2.5"/>`, se.Class, strings.Replace(pts[0], ",", `" cy="`, 1))
		}
		fmt.Fprintf(&b, `<polyline class="%s" points="%s"><title>%s</title></polyline>`, se.Class, strings.Join(pts, " "), se.Name)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // only numbers and fixed words
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, dividable into
// valueTicks even steps; whole numbers unless fractions.
func niceCeil(v float64, fractions bool) float64 {
	if v <= 0 {
		if fractions {
			return 1
		}
		return valueTicks
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 4, 5, 10} {
		if c := m * p; c >= v {
			if !fractions && c < valueTicks {
				return valueTicks
			}
			if !fractions && math.Mod(c, valueTicks) != 0 {
				c = math.Ceil(c/valueTicks) * valueTicks
			}
			return c
		}
	}
	return 10 * p
}

// num shows an axis value: whole numbers as such, others with up to two
// decimals; thousands as k.
func num(v float64) string {
	switch {
	case v >= 10000 && math.Mod(v, 1000) == 0:
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

func rateText(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
