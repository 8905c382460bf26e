package generator

import (
	"cmp"
	"errors"
	"fmt"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Records returns the payload schema record of every package in pkgs
// that has jobs or a record, by path (RecordName beside the package's
// queuey_gen.go), compared with the record read returns for that path
// (an error wrapping fs.ErrNotExist when there is none). Like Generate it
// writes nothing; a nil content means the record is to be removed (its
// package has no jobs any more).
//
// A record is the jobs' payloads as they are now, plus the keys of
// removed fields that jobs written earlier may still carry. notes has one
// line per change found that jobs in flight survive, each starting with
// the file:line:col of the field or job in the Go source. A change that
// they would not survive (a type changed or narrowed, a msgpack key
// renamed, a job's queue, queue type, priority or kind changed, a job
// gone) is an error, one line each and a last line that says what to do,
// unless accept is set: then it is recorded, and listed in notes too.
func Records(pkgs []*packages.Package, read func(path string) ([]byte, error), accept bool) (files map[string][]byte, notes []string, err error) {
	pkgs = slices.Clone(pkgs)
	slices.SortFunc(pkgs, func(a, b *packages.Package) int { return cmp.Compare(a.PkgPath, b.PkgPath) })
	files = map[string][]byte{}
	var errs, breaking []string
	for _, p := range pkgs {
		gen := outputFile(p)
		if gen == "" {
			continue
		}
		path := filepath.Join(filepath.Dir(gen), RecordName)
		now, err := recordOf(p)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		data, err := read(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if len(now.Jobs) > 0 {
				files[path] = now.marshal()
			}
			continue
		case err != nil:
			errs = append(errs, err.Error())
			continue
		case !isRecord(data):
			errs = append(errs, foreign(path))
			continue
		}
		old, err := parseRecord(path, data)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		changes, merged := compareRecords(old, now, token.Position{Filename: path})
		for _, c := range changes {
			switch {
			case !c.breaking:
				notes = append(notes, c.String())
			case accept:
				notes = append(notes, c.String()+" (accepted)")
			default:
				breaking = append(breaking, c.String())
			}
		}
		if len(merged.Jobs) == 0 {
			files[path] = nil
			continue
		}
		files[path] = merged.marshal()
	}
	if len(errs) > 0 {
		return nil, nil, errors.New(strings.Join(errs, "\n"))
	}
	if len(breaking) > 0 {
		breaking = append(breaking, fmt.Sprintf("queuey-gen: %d change(s) to jobs that jobs in flight would not survive: docs/upgrades.md says how to roll each out; then record them with go tool queuey-gen -accept",
			len(breaking)))
		return nil, nil, errors.New(strings.Join(breaking, "\n"))
	}
	return files, notes, nil
}
