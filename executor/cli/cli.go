package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

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

const serveUsage = `usage: tapebox-exec serve [--dial unix:PATH]

Runs one executor protocol session (see package executor/protocol): requests on stdin,
replies on stdout, logs on stderr. The process's own stdout is pointed at stderr first,
so nothing a tool prints reaches the channel.

  --dial unix:PATH   serve the session on a connection to the unix socket at PATH
                     instead; the end of stdin ends the session. TapeBox uses it for
                     containers it creates: the controller listens at PATH, in a host
                     directory mounted read-only into the container, so that calls
                     bypass the Docker engine.
`

const callUsage = `usage: tapebox-exec call --harness NAME [--cwd DIR] [--state-dir DIR] < call.json

Reads one {"op":"call",...} line from stdin and writes its {"op":"result",...} line on
stdout, or an {"op":"error",...} line and exit status 1 when it cannot run.

  --harness NAME     harness module: claude-code, codex or pi (required)
  --cwd DIR          working directory (default: the current one)
  --state-dir DIR    state directory for background tasks and saved outputs (default:
                     $TMPDIR/tapebox-exec-state-<uid>-<hash of cwd>, made when needed)
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

var errHelp = errors.New("help requested")

// parseFlags reads --name VALUE and --name=VALUE flags (one or two dashes) into the
// given names; -h and --help return errHelp.
func parseFlags(args []string, flags map[string]*string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "-help" || a == "--help" {
			return errHelp
		}
		if !strings.HasPrefix(a, "-") {
			return fmt.Errorf("unexpected argument %q", a)
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		p, ok := flags[name]
		if !ok {
			return fmt.Errorf("unknown flag %q", a)
		}
		if !hasValue {
			if i+1 >= len(args) {
				return fmt.Errorf("flag %q needs a value", a)
			}
			i++
			value = args[i]
		}
		*p = value
	}
	return nil
}

func usageError(stdout, stderr io.Writer, cmd, text string, err error) int {
	if errors.Is(err, errHelp) {
		fmt.Fprint(stdout, text)
		return 0
	}
	fmt.Fprintf(stderr, "tapebox-exec %s: %v\n%s", cmd, err, text)
	return 2
}

func serve(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var dial string
	err := parseFlags(args, map[string]*string{"dial": &dial})
	sockPath, isUnix := strings.CutPrefix(dial, "unix:")
	if err == nil && dial != "" && (!isUnix || sockPath == "") {
		err = fmt.Errorf("--dial %q: want unix:PATH", dial)
	}
	if err != nil {
		return usageError(stdout, stderr, "serve", serveUsage, err)
	}
	in, out, release, err := protocolStreams(stdin, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "tapebox-exec serve: %v\n", err)
		return 1
	}
	defer release()
	if dial != "" {
		err = serveUnix(ctx, sockPath, in, stderr)
	} else {
		err = executor.Serve(ctx, in, out, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tapebox-exec serve: %v\n", err)
		return 1
	}
	return 0
}

// protocolStreams returns the streams serve speaks the protocol on. The process's own stdout
// and stdin are taken over (see RedirectStdout and ProtocolStdin), the process made
// NotDumpable and its inherited descriptors kept from its children (KeepInheritedFiles)
// first; other streams, a test's, are used as they are. release closes what was
// taken over.
func protocolStreams(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer, func(), error) {
	var held []io.Closer
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i].Close()
		}
	}
	if f, ok := stdout.(*os.File); ok && f == os.Stdout {
		if err := NotDumpable(); err != nil {
			return nil, nil, nil, err
		}
		if err := KeepInheritedFiles(); err != nil {
			return nil, nil, nil, err
		}
		w, err := RedirectStdout()
		if err != nil {
			return nil, nil, nil, err
		}
		held, stdout = append(held, w), w
	}
	if f, ok := stdin.(*os.File); ok && f == os.Stdin {
		r, err := ProtocolStdin()
		if err != nil {
			release()
			return nil, nil, nil, err
		}
		held, stdin = append(held, r), r
	}
	return stdin, stdout, release, nil
}

func call(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var harnessName, cwd, stateDir string
	err := parseFlags(args, map[string]*string{"harness": &harnessName, "cwd": &cwd, "state-dir": &stateDir})
	if err == nil && harnessName == "" {
		err = errors.New("--harness is required (claude-code, codex or pi)")
	}
	if err != nil {
		return usageError(stdout, stderr, "call", callUsage, err)
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
	if stateDir != "" {
		sd = &stateDir
	}
	res, err := executor.Call(ctx, harnessName, cwd, sd, *env.Call)
	if err != nil {
		return fail(&env.Call.ID, err.Error())
	}
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(stderr, "tapebox-exec call: %v\n", err)
		return 1
	}
	return 0
}
