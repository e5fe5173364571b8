package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/tapebox/tapebox/schema"
)

func init() {
	register(&command{name: "validate", summary: "check tapes against the tape JSON Schema", run: runValidate})
}

// validateResult is one file's entry in validate --json.
type validateResult struct {
	File     string           `json:"file"`
	OK       bool             `json:"ok"`
	Problems []schema.Problem `json:"problems"`
	// Error is set when the file could not be read or is not JSON.
	Error string `json:"error,omitempty"`
}

func runValidate(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "validate", "[--json] [-q] FILE|DIR...", `
Checks each tape against the tape JSON Schema (schema/tape.schema.json, draft 2020-12) and
prints one line per problem: "FILE: JSON-POINTER: message", for example
  run.json: /threads/0/steps/3/response/stop_reason: required field is missing
A valid tape prints "FILE: ok" (unless -q). Files are checked in parallel on every core.
Exits 0 when every tape is valid, 1 when any is invalid or cannot be read.`)
	asJSON := fs.Bool("json", false, `print a JSON array of {"file", "ok", "problems": [{"pointer", "message"}], "error"}`)
	quiet := fs.Bool("q", false, "print nothing for valid tapes")
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() == 0 {
		return usageError(env, fs, "want at least one tape file")
	}
	paths, err := tapeArgs(fs.Args())
	if err != nil {
		return failf(env, "validate", "%v", err)
	}
	results := schema.ValidateFiles(ctx, paths)
	out := make([]validateResult, len(results))
	invalid := 0
	for i, r := range results {
		out[i] = validateResult{File: r.Path, OK: r.Err == nil, Problems: []schema.Problem{}}
		var ve *schema.ValidationError
		switch {
		case r.Err == nil:
		case errors.As(r.Err, &ve):
			out[i].Problems = ve.Problems
		default:
			out[i].Error = r.Err.Error()
		}
		if r.Err != nil {
			invalid++
		}
	}
	if err := writeReport(env, *asJSON, out, func() {
		for _, r := range out {
			switch {
			case r.OK:
				if !*quiet {
					fmt.Fprintf(env.Stdout, "%s: ok\n", r.File)
				}
			case r.Error != "":
				fmt.Fprintf(env.Stdout, "%s: %s\n", r.File, r.Error)
			default:
				for _, p := range r.Problems {
					fmt.Fprintf(env.Stdout, "%s: %s\n", r.File, p)
				}
			}
		}
	}); err != nil {
		return failf(env, "validate", "write report: %v", err)
	}
	if invalid > 0 {
		return failf(env, "validate", "%d of %d tapes invalid or unreadable", invalid, len(results))
	}
	return ExitOK
}
