package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// chart returns an SVG horizontal bar chart of rows: one bar per row at
// its median rate, with a line from its slowest to its fastest round.
func chart(title string, rows []row) []byte {
	const (
		labelW = 480 // left column: peer and settings
		plotW  = 440
		barH   = 22
		gap    = 10
		top    = 56
	)
	hi := 0.0
	for _, r := range rows {
		hi = math.Max(hi, r.max)
	}
	step := niceCeil(hi / 5) // about five grid steps
	scale := math.Max(math.Ceil(hi/step), 1) * step
	x := func(v float64) float64 { return labelW + v/scale*plotW }
	height := top + len(rows)*(barH+gap) + 40
	width := labelW + plotW + 90
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#fff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14" font-weight="bold">Jobs per second, end to end (higher is better)</text>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="38" fill="#555">%s</text>`+"\n", html.EscapeString(title))
	for v := 0.0; v <= scale; v += step { // grid
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(v), top-6, x(v), height-34)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`+"\n", x(v), height-20, thousands(v))
	}
	for i, r := range rows {
		y := top + i*(barH+gap)
		color := "#9aa5b1"
		if r.name == "queuey" {
			color = "#e8833a"
		}
		label := r.name + " — " + r.settings
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-8, y+barH/2+4, html.EscapeString(label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", labelW, y, x(r.median)-labelW, barH, color)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#222" stroke-width="1.5"/>`+"\n", x(r.min), y+barH/2, x(r.max), y+barH/2)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", x(r.max)+6, y+barH/2+4, thousands(r.median))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
