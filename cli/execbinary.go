package cli

import (
	"context"
	"fmt"
	"runtime"

	"github.com/tapebox/tapebox/sandbox"
)

func init() {
	register(&command{name: "exec-binary", summary: "print the path of the tapebox-exec binary for an architecture", run: runExecBinary})
}

func runExecBinary(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "exec-binary", "[--arch amd64|arm64|x86_64|aarch64]", `
Prints the path of the static Linux tapebox-exec binary for an architecture, to copy into a
sandbox by hand:

  docker cp "$(tapebox exec-binary --arch aarch64)" mybox:/usr/local/bin/tapebox-exec

It looks in $TAPEBOX_EXEC_DIR, beside the tapebox executable, in dist/ of the TapeBox source
checkout around the working directory (make executor), and otherwise builds it with the Go
toolchain into the user cache directory.`)
	arch := fs.String("arch", runtime.GOARCH, "the sandbox's architecture: amd64 (x86_64) or arm64 (aarch64)")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(env, fs, "unexpected argument %q", fs.Arg(0))
	}
	if _, err := sandbox.NormalizeArch(*arch); err != nil {
		return usageError(env, fs, "%v", err)
	}
	p, err := sandbox.ExecutorPath(ctx, *arch)
	if err != nil {
		return failf(env, "exec-binary", "%v", err)
	}
	fmt.Fprintln(env.Stdout, p)
	return ExitOK
}
