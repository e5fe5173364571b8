package cli

import (
	"context"
	"crypto/ed25519"
	"flag"
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

// redactUsage is redact's usage line, after "tapebox redact".
const redactUsage = "-o OUT [--pattern REGEX]... [--no-scan] [--sign KEY] TAPE"

// redactHelp is redact's description in --help.
const redactHelp = `
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

Exits 0 when OUT was written and no secret is left, 1 otherwise, 2 on usage error.`

// redactFlags are redact's options, parsed from its command line.
type redactFlags struct {
	out           string // -o
	patterns      listFlag
	noScan        bool
	signKey       string
	allowTampered *bool // --allow-tampered
}

// runRedact is the redact verb: it parses the flags and redacts the tape they name.
func runRedact(ctx context.Context, env *Env, args []string) int {
	fs := newFlagSet(env, "redact", redactUsage, redactHelp)
	var f redactFlags
	f.register(fs)
	if code, done := parse(env, fs, args); done {
		return code
	}
	return f.run(ctx, env, fs)
}

// register defines redact's flags on fs, to be parsed into f.
func (f *redactFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.out, "o", "", "the redacted tape (required; not the input)")
	fs.Var(&f.patterns, "pattern", "a regular expression (Go RE2 syntax) removed wherever it matches a string value (repeatable)")
	fs.BoolVar(&f.noScan, "no-scan", false, "remove only the --pattern matches, not what the secret scan finds")
	fs.StringVar(&f.signKey, "sign", "", "sign the sealed digests with this ed25519 private key (as record --sign)")
	f.allowTampered = allowTamperedFlag(fs)
}

// run checks the parsed flags, redacts the tape (fs.Arg(0)) and its start snapshot, writes
// them and says what was removed. It returns the exit code.
func (f *redactFlags) run(ctx context.Context, env *Env, fs *flag.FlagSet) int {
	res, key, code, ok := f.check(env, fs)
	if !ok {
		return code
	}
	in := fs.Arg(0)
	t, code := loadTapeToAct(env, "redact", in, *f.allowTampered)
	if t == nil {
		return code
	}
	t, removed, last, err := f.redactTape(ctx, in, t, res, key)
	if err != nil {
		return failf(env, "redact", "%v", err)
	}
	var snap *snapshotRedaction
	if !f.noScan && t.Meta.Workspace != nil && t.Meta.Workspace.Snapshot != "" {
		if snap, err = redactSnapshot(ctx, in, f.out, t); err != nil {
			return failf(env, "redact", "%s: %v", in, err)
		}
		if snap.Path != "" && t.Digest != nil {
			if err := seal.Tape(t, key); err != nil {
				return failf(env, "redact", "seal the redacted tape: %v", err)
			}
		}
	}
	if err := tape.Save(f.out, t); err != nil {
		return failf(env, "redact", "%v", err)
	}
	f.printRemoved(env, in, t, removed, last, snap)
	return ExitOK
}

// check checks the flags and the positional arguments, printing a usage error for the first
// one that is wrong; ok is false then, with the exit code. It returns the compiled
// --pattern expressions and the --sign key (nil without it).
func (f *redactFlags) check(env *Env, fs *flag.FlagSet) (res []*regexp.Regexp, key ed25519.PrivateKey, code int, ok bool) {
	if fs.NArg() != 1 {
		return nil, nil, usageError(env, fs, "want one tape file, got %d arguments", fs.NArg()), false
	}
	in := fs.Arg(0)
	if f.out == "" {
		return nil, nil, usageError(env, fs, "-o OUT is required"), false
	}
	if abs1, _ := filepath.Abs(in); abs1 == mustAbs(f.out) {
		return nil, nil, usageError(env, fs, "-o %s is the input: write the redacted tape elsewhere", f.out), false
	}
	if f.noScan && len(f.patterns) == 0 {
		return nil, nil, usageError(env, fs, "--no-scan without --pattern removes nothing"), false
	}
	for _, p := range f.patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, nil, usageError(env, fs, "--pattern %q: %v", p, err), false
		}
		res = append(res, re)
	}
	if f.signKey != "" {
		k, err := readSigningKey(f.signKey)
		if err != nil {
			return nil, nil, usageError(env, fs, "--sign: %v", err), false
		}
		key = k
	}
	return res, key, ExitOK, true
}

// redactTape removes from t (read from in) the matches of res and, unless --no-scan, what
// the secret scan finds, in up to redactPasses rounds (the first removes each secret's
// token, later ones the whole string of any finding left), sealing again with key. It
// returns the redacted tape, how many values were removed and the last round's result; an
// error when a secret remains.
func (f *redactFlags) redactTape(ctx context.Context, in string, t *tape.Tape, res []*regexp.Regexp, key ed25519.PrivateKey) (_ *tape.Tape, removed int, last *redact.Result, _ error) {
	var remaining []secrets.Finding
	for pass := 0; pass < redactPasses; pass++ {
		opts := redact.Options{Whole: pass > 0, Sign: key}
		if pass == 0 {
			opts.Patterns = res
		}
		if !f.noScan {
			found, err := secrets.Scan(ctx, t)
			if err != nil {
				return nil, 0, nil, fmt.Errorf("scan %s: %w", in, err)
			}
			remaining = found
			for _, fd := range found {
				opts.Findings = append(opts.Findings, redact.Finding{Pointer: fd.Pointer, Offset: fd.Offset, Rule: fd.Rule, Length: fd.Length, Key: fd.Key})
			}
		}
		if pass > 0 && len(opts.Findings) == 0 {
			break
		}
		r, err := redact.Tape(t, opts)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("%s: %w", in, err)
		}
		removed += len(r.Removed)
		t, last = r.Tape, r
		remaining = nil
	}
	if !f.noScan {
		found, err := secrets.Scan(ctx, t)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("scan the redacted tape: %w", err)
		}
		remaining = found
	}
	if len(remaining) > 0 {
		return nil, 0, nil, fmt.Errorf("%s: %d secrets remain after %d passes (first: %s); nothing was written", in, len(remaining), redactPasses, term.Printable(remaining[0].String()))
	}
	return t, removed, last, nil
}

// printRemoved says on stdout what was removed from the tape read from in (removed values,
// the last round's result) and from its start snapshot (snap, nil when not redacted), and
// where they were written.
func (f *redactFlags) printRemoved(env *Env, in string, t *tape.Tape, removed int, last *redact.Result, snap *snapshotRedaction) {
	if snap != nil && snap.Path != "" {
		if len(snap.Removed) > 0 {
			fmt.Fprintf(env.Stdout, "%s: removed %d values from the start snapshot (%s); wrote %s\n", in, len(snap.Removed), term.Printable(describeRemoved(snap.Removed)), term.Printable(snap.Path))
		} else {
			fmt.Fprintf(env.Stdout, "%s: the start snapshot holds no secret; copied to %s\n", in, term.Printable(snap.Path))
		}
	}
	if removed == 0 {
		fmt.Fprintf(env.Stdout, "%s: nothing to remove from the tape; wrote %s\n", in, f.out)
		return
	}
	fmt.Fprintf(env.Stdout, "%s: removed %d values (%s); wrote %s\n", in, removed, term.Printable(describeRemoved(t.Meta.Redactions[len(t.Meta.Redactions)-removed-snapRemoved(snap):len(t.Meta.Redactions)-snapRemoved(snap)])), f.out)
	switch {
	case last != nil && last.SignatureDropped:
		fmt.Fprintf(env.Stdout, "digests sealed again; the tape's signature was dropped (it covered what was removed): sign with --sign KEY\n")
	case last != nil && last.Resealed:
		fmt.Fprintf(env.Stdout, "digests sealed again\n")
	}
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
