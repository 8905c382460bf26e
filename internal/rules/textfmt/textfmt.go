// Package textfmt holds how values read for operators where the queuey
// command and the dashboard both show them, so that the two say a thing
// alike.
package textfmt

import "time"

// Age is d for people: "-" for none, milliseconds under a second, else
// whole seconds.
func Age(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
