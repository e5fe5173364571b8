package cli

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/tapebox/tapebox/internal/term"
	"github.com/tapebox/tapebox/secrets"
	"github.com/tapebox/tapebox/tape"
	"github.com/tapebox/tapebox/tape/redact"
)

func init() {
	register(&command{name: "redact", summary: "remove secrets from a tape (what scan finds, or --pattern) and seal its digests again", run: runRedact})
}

// redactPasses bounds the scan-and-redact rounds: the first removes each secret's token,
// a second the whole string of any finding left.
const redactPasses = 3

func runRedact(ctx context.Context, env *Env, args []string) int {
	var patterns listFlag
	fs := newFlagSet(env, "redact", "-o OUT [--pattern REGEX]... [--no-scan] [--sign KEY] TAPE", `
Removes secrets from a tape and writes the result to OUT: every place tapebox scan finds a
secret (request and response bodies, raw and normalized, stream chunks, headers, the request
path, meta), and every match of each --pattern in a string value. Each removed value becomes
REDACTED. Protocol identifiers are left alone (tool call and message ids, thread ids,
parents, digests, signatures, and the members named type, role, name and path), so the tape
still replays as it did.

The tape records what was removed in meta.redactions: the rule (the scan's rule, or
pattern:REGEX) and the JSON pointer of the string, never the value. A tape that carried
digests is sealed again; a signature cannot survive (it covered what was removed): give
--sign KEY to sign again, else the tape is written unsigned and redact says so. A tape
whose digests do not match is refused (redacting would seal the tampering), unless
--allow-tampered.

After redacting, the tape is scanned again: a secret still found has its whole string
removed, and redact fails if any remains after that. Secrets in the start snapshot
(meta.workspace) and in member names are not rewritten: redact names them and exits 1
after writing OUT (publish without the snapshot: dataset export --no-workspace).

Exits 0 when OUT was written and no secret is left, 1 otherwise, 2 on usage error.`)
	out := fs.String("o", "", "the redacted tape (required; not the input)")
	fs.Var(&patterns, "pattern", "a regular expression (Go RE2 syntax) removed wherever it matches a string value (repeatable)")
	noScan := fs.Bool("no-scan", false, "remove only the --pattern matches, not what the secret scan finds")
	signKey := fs.String("sign", "", "sign the sealed digests with this ed25519 private key (as record --sign)")
	allowTampered := allowTamperedFlag(fs)
	if code, done := parse(env, fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(env, fs, "want one tape file, got %d arguments", fs.NArg())
	}
	in := fs.Arg(0)
	if *out == "" {
		return usageError(env, fs, "-o OUT is required")
	}
	if abs1, _ := filepath.Abs(in); abs1 == mustAbs(*out) {
		return usageError(env, fs, "-o %s is the input: write the redacted tape elsewhere", *out)
	}
	if *noScan && len(patterns) == 0 {
		return usageError(env, fs, "--no-scan without --pattern removes nothing")
	}
	var res []*regexp.Regexp
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return usageError(env, fs, "--pattern %q: %v", p, err)
		}
		res = append(res, re)
	}
	var key ed25519.PrivateKey
	if *signKey != "" {
		k, err := readSigningKey(*signKey)
		if err != nil {
			return usageError(env, fs, "--sign: %v", err)
		}
		key = k
	}
	t, code := loadTapeToAct(env, "redact", in, *allowTampered)
	if t == nil {
		return code
	}
	var (
		removed   int
		last      *redact.Result
		remaining []secrets.Finding
		kept      []secrets.Finding // in the start snapshot or in a member name: not removed here
	)
	// split keeps aside the findings redact does not remove: in the start snapshot's files
	// and in member names.
	split := func(found []secrets.Finding) (fix []secrets.Finding) {
		kept = kept[:0]
		for _, f := range found {
			if f.Member != "" || f.Key {
				kept = append(kept, f)
				continue
			}
			fix = append(fix, f)
		}
		return fix
	}
	for pass := 0; pass < redactPasses; pass++ {
		opts := redact.Options{Whole: pass > 0, Sign: key}
		if pass == 0 {
			opts.Patterns = res
		}
		if !*noScan {
			found, err := secrets.Scan(ctx, t)
			if err != nil {
				return failf(env, "redact", "scan %s: %v", in, err)
			}
			found = split(found)
			remaining = found
			for _, f := range found {
				opts.Findings = append(opts.Findings, redact.Finding{Pointer: f.Pointer, Offset: f.Offset, Rule: f.Rule, Length: f.Length})
			}
		}
		if pass > 0 && len(opts.Findings) == 0 {
			break
		}
		r, err := redact.Tape(t, opts)
		if err != nil {
			return failf(env, "redact", "%s: %v", in, err)
		}
		removed += len(r.Removed)
		t, last = r.Tape, r
		remaining = nil
	}
	if !*noScan {
		found, err := secrets.Scan(ctx, t)
		if err != nil {
			return failf(env, "redact", "scan the redacted tape: %v", err)
		}
		remaining = split(found)
	}
	if len(remaining) > 0 {
		return failf(env, "redact", "%s: %d secrets remain after %d passes (first: %s); nothing was written", in, len(remaining), redactPasses, term.Printable(remaining[0].String()))
	}
	if err := tape.Save(*out, t); err != nil {
		return failf(env, "redact", "%v", err)
	}
	if removed == 0 {
		fmt.Fprintf(env.Stdout, "%s: nothing to remove; wrote %s\n", in, *out)
		return reportKept(env, kept)
	}
	fmt.Fprintf(env.Stdout, "%s: removed %d values (%s); wrote %s\n", in, removed, term.Printable(describeRemoved(t.Meta.Redactions)), *out)
	switch {
	case last != nil && last.SignatureDropped:
		fmt.Fprintf(env.Stdout, "digests sealed again; the tape's signature was dropped (it covered what was removed): sign with --sign KEY\n")
	case last != nil && last.Resealed:
		fmt.Fprintf(env.Stdout, "digests sealed again\n")
	}
	return reportKept(env, kept)
}

// reportKept names the secrets redact leaves (in the start snapshot, in member names) and
// fails when there are any, so that a script does not publish them.
func reportKept(env *Env, kept []secrets.Finding) int {
	if len(kept) == 0 {
		return ExitOK
	}
	for _, f := range kept {
		fmt.Fprintf(env.Stderr, "not removed: %s\n", term.Printable(f.String()))
	}
	return failf(env, "redact", "%d secrets remain in the start snapshot or in member names, which redact does not rewrite: remove them at the source, or publish without the snapshot (dataset export --no-workspace)", len(kept))
}

// describeRemoved counts the redactions by rule: "aws-access-token ×2, pattern:x ×1".
func describeRemoved(rs []tape.Redaction) string {
	return (&redact.Result{Removed: rs}).Describe()
}

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}
