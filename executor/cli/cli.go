package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tapebox/tapebox/executor"
	"github.com/tapebox/tapebox/executor/protocol"
)

const usage = `usage: tapebox-exec <command> [flags]

Commands:
  serve     run an executor protocol session: requests on stdin, replies on stdout
            (one JSON object per line), logs on stderr
  call      run one call request read from stdin and print its result line
            (--harness NAME --cwd DIR [--state-dir DIR])
  version   print the version

Run "tapebox-exec <command> --help" for a command's flags.
`

// Run runs the command line args (without the program name) and returns the exit
// status.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdin, stdout, stderr)
	case "call":
		return call(ctx, args[1:], stdin, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "tapebox-exec %s (protocol %d, %s)\n", executor.Version, protocol.Version, executor.Platform())
		return 0
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "tapebox-exec: unknown command %q\n%s", args[0], usage)
	return 2
}

func parse(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "tapebox-exec %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return 2, false
	}
	return 0, true
}

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: tapebox-exec serve\n\nRuns one executor protocol session (see package executor/protocol). The process's\nown stdout is pointed at stderr first, so nothing a tool prints reaches the channel.\n")
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	out := stdout
	if f, ok := stdout.(*os.File); ok && f == os.Stdout {
		ch, err := RedirectStdout()
		if err != nil {
			fmt.Fprintf(stderr, "tapebox-exec serve: %v\n", err)
			return 1
		}
		defer ch.Close()
		out = ch
	}
	if err := executor.Serve(ctx, stdin, out, stderr); err != nil {
		fmt.Fprintf(stderr, "tapebox-exec serve: %v\n", err)
		return 1
	}
	return 0
}

func call(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	harnessName := fs.String("harness", "", "harness module: claude-code or codex (required)")
	cwd := fs.String("cwd", "", "working directory (default: the current one)")
	stateDir := fs.String("state-dir", "", "state directory for background tasks (default: <cwd>/.tapebox)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: tapebox-exec call --harness NAME --cwd DIR [--state-dir DIR] < call.json\n\nReads one {\"op\":\"call\",...} line from stdin and writes its {\"op\":\"result\",...} line\non stdout (an {\"op\":\"error\",...} line and status 1 if it cannot run).\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *harnessName == "" {
		fmt.Fprint(stderr, "tapebox-exec call: --harness is required (claude-code or codex)\n")
		return 2
	}
	enc := protocol.NewEncoder(stdout)
	fail := func(id *string, msg string) int {
		_ = enc.Encode(protocol.Error{Op: protocol.OpError, ID: id, Message: msg})
		fmt.Fprintf(stderr, "tapebox-exec call: %s\n", msg)
		return 1
	}
	env, err := protocol.NewRequestDecoder(stdin).Decode()
	if err != nil {
		var le *protocol.LineError
		if errors.As(err, &le) {
			return fail(le.ID, le.Error())
		}
		return fail(nil, "read call request: "+err.Error())
	}
	if env.Call == nil {
		return fail(nil, fmt.Sprintf("want a call request, got op %q", env.Op))
	}
	var sd *string
	if *stateDir != "" {
		sd = stateDir
	}
	res, err := executor.Call(ctx, *harnessName, *cwd, sd, *env.Call)
	if err != nil {
		return fail(&env.Call.ID, err.Error())
	}
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(stderr, "tapebox-exec call: %v\n", err)
		return 1
	}
	return 0
}
