package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is TapeBox's version; release builds set it with -ldflags "-X".
var Version = "0.1.0-dev"

func init() {
	register(&command{name: "version", summary: "print the version", run: runVersion})
}

func runVersion(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "version", "", "Prints TapeBox's version, the Go version and the platform.")
	if code, done := parse(env, fs, args); done {
		return code
	}
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = " " + s.Value
			}
		}
	}
	fmt.Fprintf(env.Stdout, "tapebox %s%s (%s, %s/%s)\n", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return ExitOK
}
