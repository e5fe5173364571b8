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
Prints the path of the static Linux tapebox-exec binary for an architecture on stdout, to copy
into a sandbox by hand, and how it was found on stderr:

  docker cp "$(tapebox exec-binary --arch aarch64)" mybox:/usr/local/bin/tapebox-exec

It is the one replay installs. It comes from $TAPEBOX_EXEC_DIR when set, else from beside the
tapebox executable, else from the TapeBox sources tapebox was built from: dist/ of the
checkout (make executor) when it is up to date, or else a build of those sources with the Go
toolchain into the user cache directory, once. Those sources are the checkout of make build
or go build, wherever the binary is copied to, or the module cache of go install ...@version;
the working directory plays no part. When none of these exists, the error says what to run.`)
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
	b, err := sandbox.FindExecutor(ctx, *arch)
	if err != nil {
		return failf(env, "exec-binary", "%v", err)
	}
	fmt.Fprintln(env.Stdout, b.Path)
	fmt.Fprintf(env.Stderr, "tapebox exec-binary: %s-%s %s\n", sandbox.ExecutorName, b.Arch, b.Found)
	return ExitOK
}
