package action

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// GlobRequest lists files by name pattern, as `rg --files --glob PATTERN` does.
type GlobRequest struct {
	Root    string
	Pattern string
	// Walk holds Hidden, NoIgnore and the like; Pattern is added to its Globs.
	Walk WalkOptions
}

// Glob returns the files under Root that match Pattern, oldest modification first (rg
// --sort=modified), ties by path. An absolute Pattern is split into the directory before
// its first wildcard and the rest.
func Glob(ctx context.Context, req GlobRequest) ([]FileEntry, error) {
	root, pat := req.Root, req.Pattern
	if filepath.IsAbs(pat) {
		root, pat = SplitGlob(pat)
	}
	opt := req.Walk
	opt.Globs = append(append([]string(nil), opt.Globs...), pat)
	var out []FileEntry
	err := Walk(ctx, root, opt, func(e FileEntry) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("glob %q in %s: %w", req.Pattern, root, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].ModTime.Equal(out[j].ModTime) {
			return out[i].ModTime.Before(out[j].ModTime)
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

// SplitGlob splits an absolute glob into its fixed directory and the pattern below it.
func SplitGlob(pat string) (dir, rest string) {
	parts := strings.Split(pat, "/")
	i := 0
	for ; i < len(parts)-1; i++ {
		if strings.ContainsAny(parts[i], "*?[{") {
			break
		}
	}
	dir = strings.Join(parts[:i], "/")
	if dir == "" {
		dir = "/"
	}
	return dir, strings.Join(parts[i:], "/")
}
