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
	"github.com/tapebox/tapebox/tape/seal"
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

A secret in a member name renames the member (to REDACTED in place of the secret, with a
suffix when its object already holds that name). The start snapshot (meta.workspace) is
redacted too: every secret the scan finds in a file's content, an entry's name or a
symbolic link's target becomes REDACTED, and the snapshot is packed again beside OUT
(OUT's name with .workspace.tar.zst), every other entry as it was; meta.workspace then
names it, with its new digest, and the end manifest's entries of files the run did not
change get the redacted content's digest. --pattern applies to the tape, not to the
snapshot.

After redacting, the tape and the snapshot are scanned again: a secret still found in the
tape has its whole string removed, and redact fails, writing nothing, if any remains after
that.

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
	)
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
			remaining = found
			for _, f := range found {
				opts.Findings = append(opts.Findings, redact.Finding{Pointer: f.Pointer, Offset: f.Offset, Rule: f.Rule, Length: f.Length, Key: f.Key})
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
		remaining = found
	}
	if len(remaining) > 0 {
		return failf(env, "redact", "%s: %d secrets remain after %d passes (first: %s); nothing was written", in, len(remaining), redactPasses, term.Printable(remaining[0].String()))
	}
	var snap *snapshotRedaction
	if !*noScan && t.Meta.Workspace != nil && t.Meta.Workspace.Snapshot != "" {
		var err error
		if snap, err = redactSnapshot(ctx, in, *out, t); err != nil {
			return failf(env, "redact", "%s: %v", in, err)
		}
		if snap.Path != "" && t.Digest != nil {
			if err := seal.Tape(t, key); err != nil {
				return failf(env, "redact", "seal the redacted tape: %v", err)
			}
		}
	}
	if err := tape.Save(*out, t); err != nil {
		return failf(env, "redact", "%v", err)
	}
	if snap != nil && snap.Path != "" {
		if len(snap.Removed) > 0 {
			fmt.Fprintf(env.Stdout, "%s: removed %d values from the start snapshot (%s); wrote %s\n", in, len(snap.Removed), term.Printable(describeRemoved(snap.Removed)), term.Printable(snap.Path))
		} else {
			fmt.Fprintf(env.Stdout, "%s: the start snapshot holds no secret; copied to %s\n", in, term.Printable(snap.Path))
		}
	}
	if removed == 0 {
		fmt.Fprintf(env.Stdout, "%s: nothing to remove from the tape; wrote %s\n", in, *out)
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "%s: removed %d values (%s); wrote %s\n", in, removed, term.Printable(describeRemoved(t.Meta.Redactions[len(t.Meta.Redactions)-removed-snapRemoved(snap):len(t.Meta.Redactions)-snapRemoved(snap)])), *out)
	switch {
	case last != nil && last.SignatureDropped:
		fmt.Fprintf(env.Stdout, "digests sealed again; the tape's signature was dropped (it covered what was removed): sign with --sign KEY\n")
	case last != nil && last.Resealed:
		fmt.Fprintf(env.Stdout, "digests sealed again\n")
	}
	return ExitOK
}

// snapRemoved is how many redactions the start snapshot's took.
func snapRemoved(s *snapshotRedaction) int {
	if s == nil {
		return 0
	}
	return len(s.Removed)
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
