package workspace

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// DefaultMaxBytes is the default cap on a snapshot's file content: 256 MiB.
const DefaultMaxBytes = 256 << 20

// DefaultExclude is what Snapshot and the manifests leave out unless Options.NoDefaultExclude
// is set; the package doc says why each is there.
var DefaultExclude = []string{"node_modules", ".venv", "__pycache__", ".tapebox"}

// Options say what a snapshot or a manifest covers. The zero value applies DefaultExclude and
// DefaultMaxBytes.
type Options struct {
	// Exclude lists glob patterns (path.Match syntax) of entries to leave out, in addition to
	// DefaultExclude. A pattern without a slash matches an entry's name at any depth; one with
	// a slash matches its path from the workspace's root (a leading or trailing slash is
	// ignored). An excluded directory is left out with everything under it.
	Exclude []string
	// NoDefaultExclude drops DefaultExclude: only Exclude applies.
	NoDefaultExclude bool
	// MaxBytes caps the file content Snapshot takes, in bytes: 0 means DefaultMaxBytes,
	// a negative value no cap. Manifests have no cap: they hold no content (Untrusted
	// bounds them).
	MaxBytes int64
	// Untrusted says the tree is a sandbox's that ran a stranger's tape: ManifestDir and
	// ManifestTar then refuse (ErrTooBig) more than UntrustedMaxBytes of file content or
	// UntrustedMaxEntries entries, as sizes and counts show before any file is hashed. A
	// sparse file of a terabyte costs a command nothing and its hash hours.
	Untrusted bool
}

// manifestLimit is what a manifest with o may read: -1 for no limit.
func (o Options) manifestLimit() (bytes int64, entries int) {
	if !o.Untrusted {
		return -1, -1
	}
	return untrustedMaxBytes, untrustedMaxEntries
}

func (o Options) maxBytes() int64 {
	switch {
	case o.MaxBytes == 0:
		return DefaultMaxBytes
	case o.MaxBytes < 0:
		return -1
	}
	return o.MaxBytes
}

// pattern is one exclusion: anchored ones match the whole relative path, the others an entry's
// name.
type pattern struct {
	glob     string
	anchored bool
}

// matcher decides what Options exclude.
type matcher []pattern

func (o Options) matcher() (matcher, error) {
	var m matcher
	add := func(p string) error {
		g := strings.Trim(p, "/")
		if g == "" {
			return fmt.Errorf("exclude pattern %q: empty", p)
		}
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("exclude pattern %q: %w", p, err)
		}
		m = append(m, pattern{glob: g, anchored: strings.Contains(strings.TrimSuffix(p, "/"), "/")})
		return nil
	}
	if !o.NoDefaultExclude {
		for _, p := range DefaultExclude {
			if err := add(p); err != nil {
				return nil, err
			}
		}
	}
	var errs []error
	for _, p := range o.Exclude {
		errs = append(errs, add(p))
	}
	return m, errors.Join(errs...)
}

// excludes reports whether the entry at rel (slash-separated, relative) is excluded itself.
func (m matcher) excludes(rel string) bool {
	base := path.Base(rel)
	for _, p := range m {
		subject := base
		if p.anchored {
			subject = rel
		}
		if ok, _ := path.Match(p.glob, subject); ok {
			return true
		}
	}
	return false
}

// excludesAny reports whether rel or one of the directories it lies in is excluded: what a
// tar stream needs, where nothing skips a directory's contents for us.
func (m matcher) excludesAny(rel string) bool {
	if len(m) == 0 {
		return false
	}
	for i := range len(rel) {
		if rel[i] == '/' && m.excludes(rel[:i]) {
			return true
		}
	}
	return m.excludes(rel)
}
