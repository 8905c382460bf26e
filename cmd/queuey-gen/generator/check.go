package generator

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Stale compares files, as Generate returns them, with what is on disk,
// and returns one line per path that is not what Generate would write:
// "path: missing", "path: stale: ..." or, for a path Generate would remove
// (its package has no jobs any more), "path: stale: ...". files may hold
// the payload schema records of Records too. It writes
// nothing. Lines are in path order; none means every file is fresh.
func Stale(files map[string][]byte) ([]string, error) {
	var out []string
	for _, path := range slices.Sorted(maps.Keys(files)) {
		want := files[path]
		got, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && want == nil:
		case errors.Is(err, fs.ErrNotExist):
			out = append(out, path+": missing")
		case err != nil:
			return nil, err
		case want == nil:
			out = append(out, path+": stale: its package has no //queuey:queue jobs any more, so queuey-gen removes it")
		case !ours(path, got):
			out = append(out, foreign(path))
		case bytes.Equal(got, want):
		case filepath.Base(path) == RecordName:
			out = append(out, path+": stale: the job structs changed since it was recorded, in ways jobs in flight survive")
		default:
			out = append(out, path+": stale: it differs from what queuey-gen generates from the annotations now")
		}
	}
	return out, nil
}
