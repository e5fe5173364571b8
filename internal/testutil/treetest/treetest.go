// Package treetest lists directory trees for tests to compare: what a command left in a
// working directory, what a restore wrote, what an export produced. Only test code imports
// it.
package treetest

import (
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
)

// List returns every path under dir (dir itself left out), relative and slash-separated,
// sorted, with "/" after directories.
func List(t testing.TB, dir string) []string {
	t.Helper()
	return walk(t, dir, true)
}

// Files is List without the directories.
func Files(t testing.TB, dir string) []string {
	t.Helper()
	return walk(t, dir, false)
}

func walk(t testing.TB, dir string, dirs bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir || d.IsDir() && !dirs {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	slices.Sort(out)
	return out
}
