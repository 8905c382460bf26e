package generator

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Write puts files in place: each content replaces its path atomically (a
// temporary file in the same directory, then a rename) and a nil content
// removes its path. It refuses, before changing anything, to replace or
// remove a file that queuey-gen did not write. When writing a temporary
// file fails, nothing has been replaced.
func Write(files map[string][]byte) error {
	paths := slices.Sorted(maps.Keys(files))
	for _, path := range paths {
		ours, err := isGenerated(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case !ours:
			return errors.New(foreign(path))
		}
	}

	temps := map[string]string{}
	cleanup := func() {
		for _, tmp := range temps {
			os.Remove(tmp)
		}
	}
	for _, path := range paths {
		if files[path] == nil {
			continue
		}
		tmp, err := writeTemp(path, files[path])
		if err != nil {
			cleanup()
			return err
		}
		temps[path] = tmp
	}
	var errs []error
	for _, path := range paths {
		if files[path] == nil {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if err := os.Rename(temps[path], path); err != nil {
			os.Remove(temps[path])
			errs = append(errs, fmt.Errorf("replace %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// writeTemp writes content to a new temporary file beside path, hidden from
// the go command by its leading dot, and returns its name.
func writeTemp(path string, content []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := f.Write(content)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(f.Name(), 0o644)); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return f.Name(), nil
}
