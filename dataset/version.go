package dataset

import (
	"cmp"
	"runtime/debug"
	"sync"
)

// CreatedBy is the created_by that the Parquet shards of an export carry, in the form the
// Parquet spec gives: "tapebox version 0.1.0 (build 4f2c…)". version is the program's
// (the CLI passes its own); empty means the main module's version in the build info. The
// build is the VCS revision the binary was built from, "-dirty" added when the tree had
// changes; a binary without one (go test, go run) leaves "(build …)" out.
func CreatedBy(version string) string {
	bi := buildInfo()
	return formatCreatedBy(cmp.Or(version, bi.version, "devel"), bi.revision)
}

func formatCreatedBy(version, revision string) string {
	s := "tapebox version " + version
	if revision != "" {
		s += " (build " + revision + ")"
	}
	return s
}

type builtFrom struct{ version, revision string }

var buildInfo = sync.OnceValue(func() builtFrom {
	var b builtFrom
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := bi.Main.Version; v != "(devel)" {
		b.version = v
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.revision != "" {
		b.revision += "-dirty"
	}
	return b
})
