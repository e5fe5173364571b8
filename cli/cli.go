// Package cli is the tapebox command line: Run parses the arguments, runs one verb and
// returns the process exit code. cmd/tapebox only wires it to os.Args and the standard
// streams, so the CLI can be tested and embedded.
//
// Exit codes: 0 success, 1 failure (an invalid tape, a replay that did not reach the end,
// tapes that differ), 2 usage error (unknown verb, bad flag, missing argument).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/tapebox/tapebox/internal/term"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// Env is what a verb may touch of the outside world. RunEnv wraps Stdout and Stderr in a
// term.Writer: everything a verb prints goes through it.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads an environment variable.
	Getenv func(string) string
}

// command is one verb.
type command struct {
	name    string
	summary string
	// run executes the verb with the arguments after the verb's name.
	run func(ctx context.Context, env *Env, args []string) int
}

var commands = map[string]*command{}

// register adds a verb; each verb's file calls it from init.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("cli: verb registered twice: " + c.name)
	}
	commands[c.name] = c
}

// Run runs the tapebox command line with args (without the program name).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return RunEnv(ctx, args, &Env{Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Getenv: os.Getenv})
}

// RunEnv is Run with every outside dependency given.
func RunEnv(ctx context.Context, args []string, env *Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if env.Stdin == nil {
		env.Stdin = strings.NewReader("")
	}
	// One writer for everything a verb prints: what a tape or a sandbox wrote reaches the
	// terminal escaped whichever path prints it (term.Writer). Only the program's own control
	// sequences and a harness's terminal go to term.Raw.
	stdout, stderr := term.NewWriter(env.Stdout), term.NewWriter(env.Stderr)
	defer stdout.Flush()
	defer stderr.Flush()
	e := *env
	e.Stdout, e.Stderr = stdout, stderr
	env = &e
	if len(args) == 0 {
		usage(env.Stderr)
		return ExitUsage
	}
	switch args[0] {
	case "--version", "-version", "-v":
		return commands["version"].run(ctx, env, nil)
	case "-h", "-help", "--help", "help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				return c.run(ctx, env, []string{"--help"})
			}
		}
		usage(env.Stdout)
		return ExitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.Stderr, "tapebox: unknown verb %q\n\n", args[0])
		usage(env.Stderr)
		return ExitUsage
	}
	return c.run(ctx, env, args[1:])
}

func usage(w io.Writer) {
	fmt.Fprint(w, `tapebox records what an AI agent does in a sandbox as a tape, replays the tape in a fresh
sandbox without a model, and turns tapes into a dataset.

Usage: tapebox VERB [flags] [args]

Verbs:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, `
Run "tapebox VERB --help" for a verb's flags.
Exit codes: 0 success, 1 failure, 2 usage error.
`)
}

// newFlagSet returns a FlagSet for a verb whose --help prints the verb's usage line, its
// description and its flags.
func newFlagSet(env *Env, name, usageLine, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: tapebox %s %s\n\n%s\n", name, usageLine, strings.TrimSpace(description))
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(out, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses args, with flags before, between or after the positional arguments
// (tapebox inspect run.json --json), as docker, gh and kubectl users expect; everything after
// "--" is positional. fs.Args() then holds the positional arguments in order. It returns
// done=true with the exit code when the verb should stop (after --help, or on a usage error).
func parse(env *Env, fs *flag.FlagSet, args []string) (code int, done bool) {
	return parseArgs(env, fs, interspersed(fs, args))
}

// parseCommand parses the flags that come before a command line (tapebox record [flags] --
// CMD ARGS...): the command starts at "--" or at the first argument that is not a flag, and
// its own flags are left to it.
func parseCommand(env *Env, fs *flag.FlagSet, args []string) (code int, done bool) {
	return parseArgs(env, fs, args)
}

func parseArgs(env *Env, fs *flag.FlagSet, args []string) (code int, done bool) {
	fs.SetOutput(env.Stderr)
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(env.Stdout)
			fs.Usage()
			return ExitOK, true
		}
	}
	// The flag package prints the whole usage after an error; a mistyped flag gets one
	// line instead, with the nearest flag and where the rest is.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.SetOutput(env.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK, true
		}
		msg := err.Error()
		if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
			msg = "unknown flag --" + name
			if near := nearestFlag(fs, name); near != "" {
				msg += " (did you mean --" + near + "?)"
			}
		}
		fmt.Fprintf(env.Stderr, "tapebox %s: %s; run \"tapebox %s --help\" for the flags\n", fs.Name(), msg, fs.Name())
		return ExitUsage, true
	}
	return 0, false
}

// nearestFlag is the flag of fs nearest to name (at most two edits away, or one name is a
// prefix of the other), "" when none is.
func nearestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		d := editDistance(name, f.Name)
		if (strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name)) && len(name) >= 3 {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && f.Name < best) {
			best, bestD = f.Name, d
		}
	})
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// interspersed reorders args so that every flag (with its value) comes first, then "--" and
// the positional arguments in their order, which the standard flag package parses.
func interspersed(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a) // "-" alone (stdin) is positional too
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // an unknown flag: Parse reports it
		}
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	return append(append(flags, "--"), pos...)
}

// usageError prints a usage error with a hint and returns ExitUsage.
func usageError(env *Env, fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(env.Stderr, "tapebox %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	fmt.Fprintf(env.Stderr, "Run \"tapebox %s --help\" for usage.\n", fs.Name())
	return ExitUsage
}

// failf prints an error for verb and returns ExitFailure.
func failf(env *Env, verb, format string, args ...any) int {
	fmt.Fprintf(env.Stderr, "tapebox %s: %s\n", verb, fmt.Sprintf(format, args...))
	return ExitFailure
}

// writeReport writes v to stdout as JSON when asJSON, else calls text; the error is the
// JSON's.
func writeReport(env *Env, asJSON bool, v any, text func()) error {
	if asJSON {
		return writeJSON(env.Stdout, v)
	}
	text()
	return nil
}

// writeJSON prints v as indented JSON, the form every verb's --json uses.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
