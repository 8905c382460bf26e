package generator

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
)

// Stale compares files, as Generate returns them, with what is on disk,
// and returns one line per path that is not what Generate would write:
// "path: missing", "path: stale: ..." or, for a path Generate would remove
// (its package has no jobs any more), "path: stale: ...". It writes
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
		case !bytes.HasPrefix(got, []byte(Header+"\n")):
			out = append(out, fmt.Sprintf("%s: not written by queuey-gen (its first line is not %q); move it away or delete it", path, Header))
		case !bytes.Equal(got, want):
			out = append(out, path+": stale: it differs from what queuey-gen generates from the annotations now")
		}
	}
	return out, nil
}
