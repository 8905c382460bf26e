package annotations

import (
	"cmp"
	"go/token"
	"slices"
	"strings"
)

// Error is one malformed annotation.
type Error struct {
	// Pos is where the problem is: the key or value at fault, or the
	// directive or type when no single key is.
	Pos token.Position
	// Key is the key at fault, empty when the problem is not one key's.
	Key string
	// Msg says what is wrong and what would be accepted.
	Msg string
}

// Error returns "file:line:col: msg".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrorList is every error found in a package, in source order. Its Error
// method puts one per line.
type ErrorList []*Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the errors of l, for errors.As.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

func (l ErrorList) sort() {
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Filename, b.Pos.Filename),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
		)
	})
}

// err returns l as an error: nil when empty.
func (l ErrorList) err() error {
	if len(l) == 0 {
		return nil
	}
	l.sort()
	return l
}
