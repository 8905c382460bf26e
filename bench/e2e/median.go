package e2e

import "slices"

// Median returns the median of v: the middle value, or the mean of the
// two middle values when there are an even number; 0 when v is empty.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MedianOf returns the median of f over spans.
func MedianOf(spans []Span, f func(Span) float64) float64 {
	v := make([]float64, len(spans))
	for i, s := range spans {
		v[i] = f(s)
	}
	return Median(v)
}
