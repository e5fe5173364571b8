package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Input is one tape file to export.
type Input struct {
	Path string
	Size int64
}

// ExpandInputs turns command-line arguments into tape files, in order: a file is itself;
// a directory gives every *.json file under it (recursively, sorted, hidden files and
// directories skipped, so a recorder's temporary files are not taken); anything else is a
// glob pattern that must match at least one file. A file named twice is taken once.
func ExpandInputs(args []string) ([]Input, error) {
	var out []Input
	seen := map[string]bool{}
	add := func(path string, size int64) {
		key := filepath.Clean(path)
		if !seen[key] {
			seen[key] = true
			out = append(out, Input{Path: path, Size: size})
		}
	}
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries { // sorted by name
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			p := filepath.Join(dir, name)
			if e.IsDir() {
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			if !strings.HasSuffix(name, ".json") {
				continue
			}
			info, err := e.Info()
			if err != nil {
				return err
			}
			if info.Mode().IsRegular() {
				add(p, info.Size())
			}
		}
		return nil
	}
	for _, arg := range args {
		info, err := os.Stat(arg)
		switch {
		case err == nil && info.IsDir():
			if err := walk(arg); err != nil {
				return nil, fmt.Errorf("read %s: %w", arg, err)
			}
		case err == nil:
			add(arg, info.Size())
		case strings.ContainsAny(arg, "*?["):
			matches, gerr := filepath.Glob(arg)
			if gerr != nil {
				return nil, fmt.Errorf("pattern %q: %w", arg, gerr)
			}
			slices.Sort(matches)
			n := 0
			for _, m := range matches {
				mi, err := os.Stat(m)
				if err != nil || mi.IsDir() {
					continue
				}
				add(m, mi.Size())
				n++
			}
			if n == 0 {
				return nil, fmt.Errorf("pattern %q matches no file", arg)
			}
		default:
			return nil, err
		}
	}
	return out, nil
}
