// Package other holds types that a job of package roundtrip nests, to show
// that fields of another package's types travel too.
package other

// Level is a defined type over int.
type Level int

// Geo is a point, nested two levels deep in a job.
type Geo struct {
	Lat, Lon float64
}

// Address is a struct of another package held by a job.
type Address struct {
	Street string
	Geo    Geo
	Tags   []string
	Level  Level
	hidden string `msgpack:"-"`
}

// WithHidden returns a with its unexported field set, which msgpack does
// not carry.
func (a Address) WithHidden(s string) Address {
	a.hidden = s
	return a
}
